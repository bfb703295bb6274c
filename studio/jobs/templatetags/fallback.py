"""``{% load fallback %}``: the "Mostly fallback" badge, first on every page, list and badge that
shows a run's figures. The one tag every template renders it through (the rule and its words are
``evaluation.summary``'s; ``tests/test_layers.py`` checks no template types the headline itself):

- ``{% fallback_badge job.outcome %}``: a flagged outcome line (``studio.jobs.fallback``) as the
  badge and its counts, inline in a list row;
- ``{% fallback_badge warning=text elem_id="..." scope="live_qa" %}``: a page's headline warning
  (``evaluation.summary.fallback_warning`` / ``serving.metrics.fallback_warning``) as a paragraph
  led by the badge;
- ``{% fallback_badge outcomes=summary.outcomes %}``: a compact "fell back / of" count, marked when
  the rule holds.
"""

from __future__ import annotations

from django import template
from django.utils.html import format_html

from evaluation.summary import HEADLINE, fell_back_counts, mostly_fell_back
from studio.jobs.fallback import is_flagged, unflagged

register = template.Library()

_BADGE = '<span class="status status-fallback">{}</span>'


@register.simple_tag
def fallback_badge(
    flag: str = "", *, warning: str = "", outcomes=None, elem_id: str = "", scope=""
):
    """The badge (see the module docstring); renders nothing where nothing mostly fell back."""
    if outcomes is not None:
        fallback, n = (outcomes or {}).get("fallback", 0), (outcomes or {}).get("n", 0)
        if not mostly_fell_back(fallback, n):
            return format_html("<span>{}/{}</span>", fallback, n)
        return format_html(
            '<span class="error" data-fallback="mostly" title="{}: {}">{}/{}</span>',
            HEADLINE,
            fell_back_counts([("", fallback, n)]),
            fallback,
            n,
        )
    if warning:
        return format_html(
            '<p class="error warning fallback-warning" data-fallback="mostly"{}>'
            + _BADGE
            + " {}{}.</p>",
            format_html(' id="{}"', elem_id) if elem_id else "",
            HEADLINE,
            format_html("<strong>{}:</strong> ", scope) if scope else "",
            warning,
        )
    if not flag or not is_flagged(flag):
        return ""
    return format_html(
        '<span class="fallback-flag" data-fallback="mostly">' + _BADGE + ' <span class="small">{}'
        "</span></span>",
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
