"""Template filters of a run's status: the headline warning of a run whose requests mostly fell
back, and which workers scored it (from the selectors)."""

from __future__ import annotations

from django import template

from studio.durations import about
from studio.evolution import selectors

register = template.Library()


@register.filter
def fallback_warning(summary: dict | None) -> str:
    """The headline warning of a run whose cases mostly fell back, else ''."""
    return selectors.outcome_warning(summary=summary)


@register.filter
def run_eta(run) -> str:
    """About how long a running run has left ("about 4 min"), or "" (selectors.run_eta)."""
    return about(selectors.run_eta(run=run))


@register.filter
def run_workers(run) -> dict:
    """{"workers": [(worker, cases)], "chunks": n, "done": n, "reclaimed": n} of a run
    (selectors.run_workers)."""
    return selectors.run_workers(run=run)
