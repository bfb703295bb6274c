"""``{% load fallback %}``: the "Mostly fallback" badge, first on every page, list and badge that
shows a run's figures (studio.jobs.fallback)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from studio.jobs.fallback import HEADLINE, is_flagged, unflagged

register = template.Library()


@register.simple_tag
def fallback_badge(flag: str):
    """The badge and its counts for a flag of ``fallback_flag`` ('' renders nothing)."""
    if not flag or not is_flagged(flag):
        return ""
    return format_html(
        '<span class="fallback-flag" data-fallback="mostly"><span class="status status-fallback">{}'
        '</span> <span class="small">{}</span></span>',
        HEADLINE,
        unflagged(flag),
    )


@register.filter
def fell_back(text: str) -> bool:
    """Whether an outcome line starts with the fallback flag."""
    return is_flagged(text or "")


@register.filter
def after_flag(text: str) -> str:
    """An outcome line without its leading headline (the page shows it as a badge)."""
    return unflagged(text or "")
