"""Template filters of the replay pages: a figure shown as serving's table shows it."""

from __future__ import annotations

from django import template

from serving.charts import format_figure
from serving.metrics import fallback_warning

register = template.Library()


@register.filter
def figure(value, key: str) -> str:
    """``{{ value|figure:"wall_p95_s" }}``: 0.769, 100.0%, n/a."""
    return format_figure(key, value)


@register.filter
def signed_figure(value, key: str) -> str:
    """A difference B - A with its sign: +0.120, -12.5% (percentage points for shares)."""
    if value is None:
        return "n/a"
    text = format_figure(key, abs(value))
    return ("+" if value > 0 else "-" if value < 0 else "±") + text


@register.filter
def ratio(value) -> str:
    return "n/a" if value is None else f"x{value:.3f}"


@register.filter
def replay_fallback_warning(summary) -> str:
    """serving.metrics' warning of a replay whose requests mostly fell back, else ''."""
    return fallback_warning((summary or {}).get("levels") or {})
