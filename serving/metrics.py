"""The deployment-replay metrics (docs/architecture.md §10), computed from raw per-request records.

A request record is one line of a run's requests.jsonl:

    {"phase": "measured" | "warmup", "concurrency": C, "case_id": ..., "ok": bool,
     "status": "ok" | "fallback" | "error" | "timeout", "wall_s": float | None,
     "has_trajectory": bool,
     "calls": [{"ttft_s", "latency_s", "input_tokens", "output_tokens", "error"}, ...]}

A request is successful (`ok`) when it came back with its final answer: a reply,
deliberate silence, or the Harness's own fallback reply (status "fallback",
reported separately as the fallback rate). It fails when the runtime hit an
error, every model call failed (status "error"), or no answer came within the
request timeout (status "timeout").

Definitions (per concurrency level, over its measured records only):

- wall P50 / P95: percentiles (linear interpolation between order statistics,
  numpy's default) of wall_s over *successful* requests;
- share within SLA (15 s): successful requests with wall_s <= SLA divided by
  ALL measured requests: a failed or timed-out request counts against it;
- execution success: successful / all measured requests;
- answered: requests that came back with the agent's own final answer (successful and not the
  Harness's fallback reply) / all measured requests. A fallback is not an answer: a level whose
  requests mostly fell back (``mostly_fallback``: fallback rate above one half) times the fallback,
  and its success and SLA shares say nothing about the model; every page and gate that shows them
  says so (:func:`fallback_warning`);
- TTFT P50 / P95: percentiles of the first model call's ttft_s, over measured
  requests whose first call streamed a token;
- decode tokens/s: per model call (output_tokens - 1) / (latency_s - ttft_s):
  the tokens after the first over the time after the first, as the client saw
  them; the mean over calls with at least 2 output tokens;
- calls per request: model calls per measured request that returned a
  trajectory (has_trajectory; a timed-out request has none, so no call count);
- input / output tokens per call: summed tokens over the number of model calls
  that completed and reported them (a failed call has no usage);
- latency CDF: per level, the share of ALL measured requests that came back
  within x seconds (successful ones only, so the curve tops out at the success
  rate and failures show instead of hiding).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from evaluation.stats import percentile  # the one percentile function, re-exported
from evaluation.summary import fell_back_counts, mostly_fell_back

DEFAULT_SLA_S = 15.0

METRIC_LABELS = {
    "wall_p50_s": "Wall P50 (s)",
    "wall_p95_s": "Wall P95 (s)",
    "ttft_p95_s": "TTFT P95 (s)",
    "decode_tokens_per_s": "Decode tok/s",
    "share_within_sla": "<= SLA",
    "success_rate": "Success",
    "answered_rate": "Answered",
    "fallback_rate": "Fallback",
    "calls_per_request": "Calls/req",
    "input_tokens_per_call": "In tok/call",
    "output_tokens_per_call": "Out tok/call",
}
"""The reported metrics, in table order, with their column labels."""

FIGURE_LABELS = {**METRIC_LABELS, "ttft_p50_s": "TTFT P50 (s)"}
"""Every per-level figure summarise() reports with a label: Table 5's columns, then those beyond
it."""

LOWER_IS_BETTER = {"wall_p50_s", "wall_p95_s", "ttft_p50_s", "ttft_p95_s"}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def call_decode_rate(call: dict[str, Any]) -> float | None:
    """Client-observed decode tokens/s of one model call, or None if not measurable."""
    out, ttft, latency = call.get("output_tokens"), call.get("ttft_s"), call.get("latency_s")
    if call.get("error") or out is None or ttft is None or latency is None or out < 2:
        return None
    decode_time = latency - ttft
    if decode_time <= 0:
        return None
    return (out - 1) / decode_time


def summarise(records: Iterable[dict[str, Any]], *, sla_s: float = DEFAULT_SLA_S) -> dict[str, Any]:
    """The metrics of one concurrency level from its request records (warm-up ignored)."""
    measured = [r for r in records if r.get("phase", "measured") == "measured"]
    n = len(measured)
    ok = [r for r in measured if r.get("ok")]
    walls = [float(r["wall_s"]) for r in ok]
    first_ttfts = []
    calls: list[dict[str, Any]] = []
    requests_with_calls = 0
    for r in measured:
        rcalls = r.get("calls") or []
        if r.get("has_trajectory"):
            requests_with_calls += 1
        calls.extend(rcalls)
        if rcalls and rcalls[0].get("ttft_s") is not None and not rcalls[0].get("error"):
            first_ttfts.append(float(rcalls[0]["ttft_s"]))
    rates = [rate for c in calls if (rate := call_decode_rate(c)) is not None]
    answered = [c for c in calls if not c.get("error")]  # a failed call reports no real usage
    # a call whose server reported no prompt tokens (0 or none) is left out: no prompt is empty
    in_calls = [c["input_tokens"] for c in answered if c.get("input_tokens")]
    out_calls = [c["output_tokens"] for c in answered if c.get("output_tokens") is not None]
    within = sum(1 for r in ok if float(r["wall_s"]) <= sla_s)
    fallbacks = sum(1 for r in measured if r.get("status") == "fallback")
    failures: dict[str, int] = {}
    for r in measured:
        if not r.get("ok"):
            status = r.get("status") or "error"
            failures[status] = failures.get(status, 0) + 1
    return {
        "n_measured": n,
        "n_success": len(ok),
        "n_calls": len(calls),
        "failures": failures,
        "sla_s": sla_s,
        "wall_p50_s": percentile(walls, 50),
        "wall_p95_s": percentile(walls, 95),
        "ttft_p50_s": percentile(first_ttfts, 50),
        "ttft_p95_s": percentile(first_ttfts, 95),
        "decode_tokens_per_s": _mean(rates),
        "share_within_sla": within / n if n else None,
        "success_rate": len(ok) / n if n else None,
        "answered_rate": sum(1 for r in ok if r.get("status") != "fallback") / n if n else None,
        "fallback_rate": fallbacks / n if n else None,
        "n_fallback": fallbacks,
        "mostly_fallback": mostly_fell_back(fallbacks, n),
        "calls_per_request": len(calls) / requests_with_calls if requests_with_calls else None,
        "input_tokens_per_call": sum(in_calls) / len(in_calls) if in_calls else None,
        "output_tokens_per_call": sum(out_calls) / len(out_calls) if out_calls else None,
    }


def level_fallbacks(level: dict[str, Any]) -> int:
    """How many of a level's measured requests fell back (a record written before ``n_fallback``
    was kept gives it as a rate)."""
    if level.get("n_fallback") is not None:
        return int(level["n_fallback"])
    return round((level.get("fallback_rate") or 0) * (level.get("n_measured") or 0))


def fallback_counts(levels: dict[Any, dict[str, Any]]) -> str:
    """``evaluation.summary.fell_back_counts`` over a replay's levels: 'C=1: 3 of 3 requests fell
    back'; "" when no level's requests mostly fell back."""
    return fell_back_counts(
        [
            (f"C={level}", level_fallbacks(m), m.get("n_measured") or 0)
            for level, m in levels.items()
            if isinstance(m, dict)
        ],
        unit="request",
    )


def fallback_warning(levels: dict[Any, dict[str, Any]]) -> str:
    """A sentence for every page and gate that shows a replay's figures when a level's requests
    mostly fell back to the Harness's fallback reply (the one rule,
    ``evaluation.summary.mostly_fell_back``); "" when none did."""
    counts = fallback_counts(levels)
    if not counts:
        return ""
    return (
        f"{counts} to the Harness's fallback reply: the wall times, the SLA "
        "share and Success time the fallback, not the model's answers; see Answered"
    )


def summarise_by_concurrency(
    records: Iterable[dict[str, Any]], *, sla_s: float = DEFAULT_SLA_S
) -> dict[int, dict[str, Any]]:
    """summarise() for each concurrency level found in the records, keyed by level."""
    levels: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        levels.setdefault(int(r["concurrency"]), []).append(r)
    return {c: summarise(rs, sla_s=sla_s) for c, rs in sorted(levels.items())}


def latency_cdf(
    records: Iterable[dict[str, Any]], *, max_points: int | None = None
) -> dict[int, dict[str, Any]]:
    """Per concurrency level, the wall-clock latency CDF over its measured requests.

    ``{level: {"n": measured, "n_success": successful, "points": [[wall_s, share], ...]}}``: one
    point per successful request in order of wall_s, ``share`` = (its rank) / measured, so the
    last point's share is the success rate. With ``max_points`` a level with more successful
    requests keeps that many points, evenly spaced in rank, the first and the last included: the
    curve drawn through them is within 1/max_points of the full one at every kept latency."""
    if max_points is not None and max_points < 2:
        raise ValueError(f"max_points {max_points}: must be at least 2")
    levels: dict[int, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("phase", "measured") == "measured":
            levels.setdefault(int(r["concurrency"]), []).append(r)
    cdf = {}
    for level, rs in sorted(levels.items()):
        walls = sorted(float(r["wall_s"]) for r in rs if r.get("ok"))
        n, k = len(rs), len(walls)
        ranks = range(k)
        if max_points is not None and k > max_points:
            ranks = sorted({round(i * (k - 1) / (max_points - 1)) for i in range(max_points)})
        cdf[level] = {"n": n, "n_success": k, "points": [[walls[i], (i + 1) / n] for i in ranks]}
    return cdf


def speculative_level(
    before: dict[str, Any] | None, after: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A level's speculative-decoding figures from the server's counters read before and after it
    (warm-up requests included). The engine server's counts give the level's own acceptance;
    SGLang reports only its running ``avg_spec_accept_length``, taken as read at the level's end."""
    if not after:
        return None
    counts, prior = after.get("counts"), (before or {}).get("counts") or {}
    if not counts:
        return {
            "acceptance_length": after.get("avg_spec_accept_length"),
            "source": "avg_spec_accept_length",
        }
    cycles = counts["cycles"] - prior.get("cycles", 0)
    drafted = counts["drafted"] - prior.get("drafted", 0)
    accepted = counts["accepted"] - prior.get("accepted", 0)
    if cycles <= 0:
        return None
    per_before = prior.get("acceptance_rate_per_position") or []
    per_after = counts.get("acceptance_rate_per_position") or []
    per_position = []
    for i, rate in enumerate(
        per_after
    ):  # rates are per cycle: back to counts, then the level's share
        kept = rate * counts["cycles"] - (
            per_before[i] * prior.get("cycles", 0) if i < len(per_before) else 0.0
        )
        per_position.append(round(kept / cycles, 4))
    return {
        "cycles": cycles,
        "drafted": drafted,
        "accepted": accepted,
        "acceptance_length": round((accepted + cycles) / cycles, 4),
        "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
        "acceptance_rate_per_position": per_position,
        "source": "engine counters",
    }
