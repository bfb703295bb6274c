"""The held-out edit benchmark: do a stage's confirmed edits, made on the dev split, help a model
they were not made for?

An evolution stage's edits turn a parent Harness version into a candidate, chosen by looking at
dev-split failures. Applied unchanged, both versions are evaluated on the *held-out* split under two
models (two checkpoints, e.g. Fixed-Harness SFT and HAT). For each model the *error-count reduction*
is (errors under the parent - errors under the candidate) / errors under the parent, a case being an
error when it does not pass (``evaluation.scoring.passed``). The report's figures: 18.1% for
Fixed-Harness SFT against 51.7% for HAT.

Cases are paired by id over the four runs (cases any run lacks are left out and counted). The
interval of each reduction and of the difference between the two models comes from one bootstrap
over those cases: every resample draws the same case ids for all four runs, so the difference is
paired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from evaluation.scoring import passed
from evaluation.stats import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    percentile_interval,
    resample_indices,
)


def _errors(rows: Sequence[Mapping[str, Any]], split: str | None) -> dict[str, bool]:
    return {
        str(r["id"]): not passed(r)
        for r in rows
        if split is None or r.get("split") in (None, split)
    }


def edit_transfer(
    *,
    models: Mapping[str, tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]],
    split: str | None = "heldout",
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> dict[str, Any]:
    """``models``: two names -> (rows under the parent version, rows under the candidate), rows
    flattened as ``evaluation.summary.score_row`` writes them. ``split``: only rows of that split
    (rows without a split count: a run of a held-out set file). ValueError when not two models or no
    case in common."""
    if len(models) != 2:
        raise ValueError(
            f"the benchmark compares two models, got {len(models)}: {', '.join(models) or 'none'}"
        )
    errors = {
        name: (_errors(parent, split), _errors(candidate, split))
        for name, (parent, candidate) in models.items()
    }
    every = [set(side) for pair in errors.values() for side in pair]
    ids = sorted(set.intersection(*every))
    if not ids:
        raise ValueError(
            "the four runs share no case of the held-out split; evaluate both versions on the "
            "same held-out cases under both models"
        )
    left_out = len(set.union(*every)) - len(ids)
    matrix = {
        name: (
            np.array([before[i] for i in ids], dtype=np.float64),
            np.array([after[i] for i in ids], dtype=np.float64),
        )
        for name, (before, after) in errors.items()
    }
    draws = np.concatenate(list(resample_indices(n=len(ids), resamples=resamples, seed=seed)))
    result: dict[str, Any] = {
        "n": len(ids),
        "left_out": left_out,
        "resamples": resamples,
        "confidence": confidence,
        "models": {},
    }
    sampled: dict[str, np.ndarray] = {}
    for name, (before, after) in matrix.items():
        eb, ea = before[draws].sum(axis=1), after[draws].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            sampled[name] = np.where(eb > 0, (eb - ea) / eb, np.nan)
        errors_before, errors_after = int(before.sum()), int(after.sum())
        block: dict[str, Any] = {
            "errors_parent": errors_before,
            "errors_candidate": errors_after,
            "reduction_pct": None,
            "low": None,
            "high": None,
        }
        if errors_before:
            low, high = percentile_interval(sampled[name][~np.isnan(sampled[name])], confidence)
            block.update(
                reduction_pct=round(100 * (errors_before - errors_after) / errors_before, 1),
                low=round(100 * low, 1),
                high=round(100 * high, 1),
            )
        result["models"][name] = block
    first, second = list(matrix)
    a, b = result["models"][first], result["models"][second]
    result["difference"] = None
    if a["reduction_pct"] is not None and b["reduction_pct"] is not None:
        diff = sampled[second] - sampled[first]
        diff = diff[~np.isnan(diff)]
        low, high = percentile_interval(diff, confidence)
        result["difference"] = {
            "of": f"{second} - {first}",
            "delta_pct": round(b["reduction_pct"] - a["reduction_pct"], 1),
            "low": round(100 * low, 1),
            "high": round(100 * high, 1),
        }
    return result


def edit_transfer_markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Held-out edit benchmark",
        "",
        f"{result['n']} held-out cases scored in all four runs"
        + (f" ({result['left_out']} left out: not in every run)" if result["left_out"] else "")
        + ".",
        "",
        "| model | errors before the edits | after | error-count reduction | 95% interval |",
        "|---|---|---|---|---|",
    ]
    for name, m in result["models"].items():
        shown = "no error to reduce" if m["reduction_pct"] is None else f"{m['reduction_pct']:.1f}%"
        interval = "" if m["low"] is None else f"[{m['low']:.1f}, {m['high']:.1f}]"
        lines.append(
            f"| {name} | {m['errors_parent']} | {m['errors_candidate']} | {shown} | {interval} |"
        )
    d = result["difference"]
    if d:
        lines += [
            "",
            f"Difference ({d['of']}): {d['delta_pct']:+.1f} points, 95% interval "
            f"[{d['low']:+.1f}, {d['high']:+.1f}] (paired bootstrap over the same cases, "
            f"{result['resamples']} resamples).",
        ]
    return "\n".join(lines) + "\n"
