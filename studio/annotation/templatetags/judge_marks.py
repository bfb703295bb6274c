"""``{% judge_mark %}``: beside any figure an evaluation judge scored, whether that judge was
calibrated against human labels (and at what agreement), read from ``selectors.judge_standing``."""

from __future__ import annotations

from django import template

register = template.Library()


@register.inclusion_tag("annotation/_judge_mark.html")
def judge_mark(judge: str = ""):
    from studio.annotation.selectors import judge_standing
    from studio.evolution.services.runs import EVAL_JUDGE

    return {"standing": judge_standing(judge=judge or EVAL_JUDGE)}
