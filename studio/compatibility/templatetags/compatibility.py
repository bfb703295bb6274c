"""``{% retrain_alarms %}``: the retrain alarm on the ML engineer's pages (training runs,
checkpoints)."""

from __future__ import annotations

from django import template

register = template.Library()


@register.inclusion_tag("compatibility/_retrain_alarm.html", takes_context=True)
def retrain_alarms(context) -> dict:
    from studio.compatibility.selectors import retrain_alarms as alarms

    return {"alarms": alarms(), "can": context.get("can")}
