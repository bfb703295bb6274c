"""Side-by-side comparison of two replay runs with per-metric differences (B - A) and ratios (B /
A)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from serving.metrics import FIGURE_LABELS, LOWER_IS_BETTER, METRIC_LABELS


def compare_summaries(
    a: dict[str, Any], b: dict[str, Any], *, metrics: Iterable[str] = METRIC_LABELS
) -> dict[str, Any]:
    """Per concurrency level present in both runs, each of ``metrics``: A, B, B - A and B/A."""
    levels = sorted(set(a["levels"]) & set(b["levels"]), key=int)
    rows = []
    for level in levels:
        for key in metrics:
            va, vb = a["levels"][level].get(key), b["levels"][level].get(key)
            ratio = vb / va if va not in (None, 0) and vb is not None else None
            rows.append(
                {
                    "concurrency": int(level),
                    "metric": key,
                    "a": va,
                    "b": vb,
                    "difference": vb - va if va is not None and vb is not None else None,
                    "ratio": ratio,
                    "lower_is_better": key in LOWER_IS_BETTER,
                }
            )
    warnings = []
    if a["case_manifest_digest"] != b["case_manifest_digest"]:
        warnings.append("the runs replayed different case manifests; figures are not paired")
    if a["harness_digest"] != b["harness_digest"]:
        warnings.append("the runs used different Harness versions")
    if a["generation"] != b["generation"]:
        warnings.append("the runs used different generation settings")
    only = sorted(set(a["levels"]) ^ set(b["levels"]), key=int)
    if only:
        warnings.append(f"concurrency levels in only one run (not compared): {', '.join(only)}")
    return {"a": a["run_id"], "b": b["run_id"], "rows": rows, "warnings": warnings}


def comparison_markdown(comparison: dict[str, Any], a: dict[str, Any], b: dict[str, Any]) -> str:
    lines = [
        f"A = `{a['run_id']}` ({a['route']}, {a.get('checkpoint')})",
        f"B = `{b['run_id']}` ({b['route']}, {b.get('checkpoint')})",
        "",
        "| C | Metric | A | B | B/A |",
        "|---:|---|---:|---:|---:|",
    ]
    for row in comparison["rows"]:

        def num(v):
            return "n/a" if v is None else f"{v:.4g}"

        ratio = "n/a" if row["ratio"] is None else f"x{row['ratio']:.3f}"
        lines.append(
            f"| {row['concurrency']} | {FIGURE_LABELS[row['metric']]} "
            f"| {num(row['a'])} | {num(row['b'])} | {ratio} |"
        )
    for warning in comparison["warnings"]:
        lines.append(f"\nWarning: {warning}.")
    return "\n".join(lines) + "\n"
