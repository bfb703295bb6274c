"""Template filter for the headline warning of a run whose requests mostly fell back (from the selectors)."""

from __future__ import annotations

from django import template

from studio.evolution import selectors

register = template.Library()


@register.filter
def fallback_warning(summary: dict | None) -> str:
    """The headline warning of a run whose cases mostly fell back, else ''."""
    return selectors.outcome_warning(summary=summary)
