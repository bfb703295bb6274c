"""The summary of an evaluation run, from its result rows: the one summary every loop and page
shows.

Input: rows as ``evaluation.scoring.CaseScorer.score`` makes them (``id``,
``category``, ``verdict``, ``outcome``, ``latency_s``, optional ``split`` and
``error``); rows stored by older runs with ``wall_s`` instead of ``latency_s``
or without ``outcome`` are read too. Scores are percent, rounded to 2 places.

- ``overall`` / ``per_category`` / ``per_split``: n, Accuracy, Effectiveness,
  AVG (and rubric AVG where cases carry rubrics);
- ``failed``: cases that did not pass (pass = Accuracy 1 and Effectiveness 1,
  ``evaluation.scoring.passed``);
- ``latency_s``: mean, p50, p95 (``evaluation.stats.percentile``) and total;
- ``outcomes``: how the requests ended: ``n``, ``replied``, ``effective``
  (replied with Effectiveness 1), ``fallback``, ``suppressed``, ``silent``,
  ``error``; ``mostly_fallback`` is true when more than half of the cases
  ended in the Harness's fallback reply, so a headline Accuracy means little.

The fallback rule lives here, once, for every loop, record and page (``serving.metrics`` for a
replay's levels, ``studio.jobs.fallback`` for jobs and lists, the edit benchmark):
:func:`mostly_fell_back` is the predicate (more than half), :data:`HEADLINE` the badge and
:func:`fell_back_counts` the words ("live_qa: 5 of 5 cases fell back").
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from typing import Any

from evaluation.scoring import OUTCOMES, passed, request_outcome
from evaluation.stats import category_breakdown, percentile

METRICS = ("accuracy", "effectiveness", "avg", "rubric_avg")


def score_row(row: dict[str, Any]) -> dict[str, Any]:
    """A result row flattened to {id, category, split, accuracy, effectiveness, avg, rubric_avg,
    reasons, outcome, latency_s, error}."""
    verdict = (
        (row.get("verdict") or {}) if "verdict" in row else row
    )  # training rows keep the scores flat
    outcome = row.get("outcome")
    if outcome not in OUTCOMES and ("trajectory" in row or row.get("error")):
        # a row stored before outcomes were classified here; a row of scores only has none
        outcome = request_outcome(row.get("trajectory"), error=row.get("error"))
    latency = row.get("latency_s", row.get("wall_s"))
    return {
        "id": row["id"],
        "category": row.get("category", "unknown"),
        "split": row.get("split"),
        "accuracy": verdict.get("accuracy"),
        "effectiveness": verdict.get("effectiveness"),
        "avg": verdict.get("avg"),
        "rubric_avg": verdict.get("rubric_avg"),
        "reasons": [r["code"] if isinstance(r, dict) else r for r in verdict.get("reasons") or []],
        "outcome": outcome,
        "latency_s": None if latency is None else float(latency),
        "error": row.get("error"),
    }


def outcome_counts(flat: list[dict[str, Any]]) -> dict[str, int]:
    """``{n, replied, effective, fallback, suppressed, silent, error}`` of flattened rows."""
    counts = {
        "n": len(flat),
        "replied": 0,
        "effective": 0,
        "fallback": 0,
        "suppressed": 0,
        "silent": 0,
        "error": 0,
    }
    for row in flat:
        if row["outcome"] is None:  # scores only: counted in n, not classified
            continue
        counts[row["outcome"]] += 1
        counts["effective"] += row["outcome"] == "replied" and float(row["effectiveness"] or 0) >= 1
    return counts


HEADLINE = "Mostly fallback"


def mostly_fell_back(fallback: int, n: int) -> bool:
    """The one fallback rule: more than half of ``n`` requests (or cases) ended in the Harness's
    fallback reply, so figures over them time or judge the fallback, not the agent."""
    return n > 0 and 2 * fallback > n


def fell_back_counts(counts: Iterable[tuple[str, int, int]], *, unit: str = "case") -> str:
    """The words of the rule over the scopes ``(name, fell back, of)`` where more than half fell
    back (a scope named "" is the whole run): 'live_qa: 5 of 5 cases fell back'; "" when none
    did."""
    parts = [
        f"{name}: {fallback} of {n}" if name else f"{fallback} of {n}"
        for name, fallback, n in counts
        if mostly_fell_back(fallback, n)
    ]
    if not parts:
        return ""
    plural = "" if len(parts) == 1 and parts[0].endswith(" of 1") else "s"
    return f"{', '.join(parts)} {unit}{plural} fell back"


def mostly_fallback(outcomes: dict[str, int]) -> bool:
    """More than half of the cases ended in the Harness's fallback reply."""
    return mostly_fell_back(outcomes.get("fallback", 0), outcomes.get("n", 0))


def _blocks(flat: list[dict[str, Any]], key: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for metric in METRICS:
        for name, stat in category_breakdown(rows=flat, metric=metric, category_key=key).items():
            out.setdefault(name, {"n": stat.n})[metric] = round(100 * stat.mean, 2)
    return out


def summarize(
    rows: list[dict[str, Any]], *, config: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The run summary of ``rows`` (see the module docstring); ``config`` is kept as it is."""
    flat = [score_row(r) for r in rows]
    per_category = _blocks(flat, "category")
    overall = per_category.pop("ALL", {"n": 0})
    per_split = _blocks([r for r in flat if r["split"]], "split")
    per_split.pop("ALL", None)
    latencies = [r["latency_s"] for r in flat if r["latency_s"] is not None]
    outcomes = outcome_counts(flat)
    return {
        "config": config or {},
        "n": len(flat),
        "overall": overall,
        "per_category": per_category,
        "per_split": per_split,
        "failed": sum(1 for r in flat if not passed(r)),
        "errors": outcomes["error"],
        "outcomes": outcomes,
        "mostly_fallback": mostly_fallback(outcomes),
        "reason_counts": dict(Counter(code for r in flat for code in r["reasons"]).most_common()),
        "latency_s": {
            "mean": round(statistics.fmean(latencies), 3) if latencies else None,
            "p50": _round(percentile(latencies, 50)),
            "p95": _round(percentile(latencies, 95)),
            "total": round(sum(latencies), 3),
        },
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def outcome_line(summary: dict[str, Any]) -> str:
    """How the requests ended, in one line: 'replied 12 (effective 9), fallback 3, ...'."""
    o = summary["outcomes"]
    return (
        f"replied {o['replied']} (effective {o['effective']}), fallback {o['fallback']}, "
        f"suppressed {o['suppressed']}, silent {o['silent']}, error {o['error']} of {o['n']}"
    )


def fallback_warning(summary: dict[str, Any]) -> str:
    """The headline warning of a run where most cases fell back, else ''."""
    o = summary.get("outcomes") or {}
    counts = fell_back_counts([("", o.get("fallback", 0), o.get("n", 0))])
    if not counts:
        return ""
    return (
        f"{counts} to the Harness's fallback reply: the scores say how "
        "the fallback is judged, not how the agent answers"
    )
