"""The one rule for every page, list and badge: where most requests fell back, say so first.

A job, an evaluation run, a replay level or a compatibility cell whose requests mostly ended in the
Harness's fallback reply is flagged before any of its figures, in the same words everywhere. The
rule and its words are the library's (``evaluation.summary``: ``mostly_fell_back``, ``HEADLINE``,
``fell_back_counts``; ``serving.metrics.fallback_counts`` for a replay's levels); this module only
puts them on a job's outcome line: the line starts with the flag (``fallback_first``), so its list
row and its page can put the badge first and never show such a job as a green "ran". Pages render
the badge through the one template tag ``{% fallback_badge %}`` (``studio.jobs.templatetags``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evaluation.summary import HEADLINE, fell_back_counts

__all__ = ["HEADLINE", "fallback_flag", "summary_flag", "replay_flag", "fallback_first"]


def fallback_flag(*, counts: Iterable[tuple[str, int, int]], unit: str = "request") -> str:
    """'Mostly fallback: live_qa: 5 of 5 cases fell back' over the scopes ``(name, fell back, of)``
    where more than half did (a scope named "" is the whole run); "" when none did."""
    words = fell_back_counts(counts, unit=unit)
    return f"{HEADLINE}: {words}" if words else ""


def summary_flag(summaries: dict[str, Any]) -> str:
    """The flag over evaluation summaries by name (each with ``evaluation.summary``'s ``outcomes``;
    the name "" is the whole run): 'Mostly fallback: live_qa: 5 of 5 cases fell back'."""
    return fallback_flag(
        counts=[
            (name, s["outcomes"].get("fallback", 0), s["outcomes"].get("n", 0))
            for name, s in summaries.items()
            if isinstance(s, dict) and isinstance(s.get("outcomes"), dict)
        ],
        unit="case",
    )


def replay_flag(levels: dict[str, Any]) -> str:
    """The flag over a replay's levels (``serving.metrics.fallback_counts``): 'Mostly fallback: C=1:
    3 of 3 requests fell back'."""
    from serving.metrics import fallback_counts

    words = fallback_counts(levels or {})
    return f"{HEADLINE}: {words}" if words else ""


def fallback_first(text: str, *, flag: str) -> str:
    """``text`` with the flag in front of it (the rule: say so first)."""
    if not flag:
        return text
    return f"{flag}; {text}" if text else flag


def is_flagged(text: str) -> bool:
    """Whether a line written by ``fallback_first`` starts with the flag."""
    return text.startswith(HEADLINE + ":")


def unflagged(text: str) -> str:
    """The part of a flagged line after the headline ('5 of 5 cases fell back; ...'), for a page
    that shows the headline as a badge."""
    return text[len(HEADLINE) + 1 :].lstrip() if is_flagged(text) else text
