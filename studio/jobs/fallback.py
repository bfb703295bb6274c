"""The one rule for every page, list and badge: where most requests fell back, say so first.

A job, an evaluation run, a replay level or a compatibility cell whose requests mostly ended in the
Harness's fallback reply (more than half, as ``evaluation.summary.mostly_fallback`` and
``serving.metrics`` count it) is flagged before any of its figures, in the same words everywhere:
the badge "Mostly fallback" and "N of M cases fell back". A job's outcome line starts with the flag
(``fallback_first``), so its list row and its page can put the badge first and never show such a
job as a green "ran".
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

HEADLINE = "Mostly fallback"


def mostly_fell_back(fallback: int, n: int) -> bool:
    """More than half of ``n`` requests ended in the fallback reply."""
    return n > 0 and 2 * fallback > n


def fallback_flag(*, counts: Iterable[tuple[str, int, int]], unit: str = "request") -> str:
    """'Mostly fallback: live_qa: 5 of 5 cases fell back' over the scopes ``(name, fell back, of)``
    where more than half did (a scope named "" is the whole run); "" when none did."""
    parts = [
        f"{name}: {fallback} of {n}" if name else f"{fallback} of {n}"
        for name, fallback, n in counts
        if mostly_fell_back(fallback, n)
    ]
    if not parts:
        return ""
    plural = "" if len(parts) == 1 and parts[0].endswith(" of 1") else "s"
    return f"{HEADLINE}: {', '.join(parts)} {unit}{plural} fell back"


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
    """The flag over a replay's levels (``serving.metrics``: ``fallback_rate`` of ``n_measured``
    requests): 'Mostly fallback: C=1: 3 of 3 requests fell back'."""
    return fallback_flag(
        counts=[
            (
                f"C={level}",
                round((m.get("fallback_rate") or 0) * (m.get("n_measured") or 0)),
                m.get("n_measured") or 0,
            )
            for level, m in levels.items()
            if isinstance(m, dict)
        ]
    )


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
