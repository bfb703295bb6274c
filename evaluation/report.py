"""Reports of an evaluation run: summary JSON, Markdown and per-category bar charts (PNG).

Input is the list of per-case result rows the runner appends to
``results.jsonl`` (each with ``category`` and a judge ``verdict``).
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from evaluation.stats import category_breakdown

METRICS = ("accuracy", "effectiveness", "avg", "rubric_avg")


def score_rows(rows: list[dict]) -> list[dict]:
    """Flatten result rows to {id, category, accuracy, effectiveness, avg, rubric_avg}."""
    flat = []
    for row in rows:
        verdict = row.get("verdict") or {}
        flat.append({
            "id": row["id"], "category": row.get("category", "unknown"),
            "accuracy": verdict.get("accuracy"), "effectiveness": verdict.get("effectiveness"),
            "avg": verdict.get("avg"), "rubric_avg": verdict.get("rubric_avg"),
        })
    return flat


def summarize(rows: list[dict], *, config: dict | None = None) -> dict[str, Any]:
    flat = score_rows(rows)
    per_metric = {m: {k: {"n": v.n, "mean": v.mean} for k, v in
                      category_breakdown(rows=flat, metric=m).items()} for m in METRICS}
    reasons = Counter(r["code"] for row in rows for r in (row.get("verdict") or {}).get("reasons", []))
    walls = sorted(row["wall_s"] for row in rows if row.get("wall_s") is not None)

    def pct(q: float) -> float | None:
        return walls[min(len(walls) - 1, int(q * len(walls)))] if walls else None

    return {
        "config": config or {},
        "n": len(rows),
        "errors": sum(1 for row in rows if row.get("error")),
        "metrics": per_metric,
        "reason_counts": dict(reasons.most_common()),
        "wall_s": {"mean": statistics.fmean(walls) if walls else None, "p50": pct(0.5), "p95": pct(0.95),
                   "total_case_s": sum(walls)},
    }


def _fmt(value: float | None, scale: float = 100.0) -> str:
    return "-" if value is None else f"{scale * value:.2f}"


def markdown(summary: dict[str, Any]) -> str:
    cfg = summary.get("config", {})
    acc = summary["metrics"]["accuracy"]
    lines = [
        f"# Evaluation run: {cfg.get('set_name', '?')}", "",
        f"- Harness: {cfg.get('harness_name', '?')} ({str(cfg.get('harness_digest', ''))[:12]})",
        f"- Policy: {cfg.get('policy', '?')}; judge: {cfg.get('judge', '?')}",
        f"- Cases: {summary['n']} (errors: {summary['errors']})",
        f"- Wall per case: p50 {summary['wall_s']['p50'] or 0:.2f} s, p95 {summary['wall_s']['p95'] or 0:.2f} s", "",
        "| category | n | Accuracy | Effectiveness | AVG | rubric AVG |", "|---|---|---|---|---|---|",
    ]
    cats = sorted(acc, key=lambda k: (k == "ALL", k))
    for cat in cats:
        row = [summary["metrics"][m].get(cat, {}).get("mean") for m in METRICS]
        lines.append(f"| {cat} | {acc[cat]['n']} | " + " | ".join(_fmt(v) for v in row) + " |")
    if summary["reason_counts"]:
        lines += ["", "## Reason codes", "", "| code | cases |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in summary["reason_counts"].items()]
    return "\n".join(lines) + "\n"


def category_chart(summary: dict[str, Any], path: str | Path) -> Path:
    """Grouped bars of Accuracy, Effectiveness and AVG per category, written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acc = summary["metrics"]["accuracy"]
    cats = sorted(acc, key=lambda k: (k == "ALL", k))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(cats)), 4))
    width = 0.27
    for i, metric in enumerate(("accuracy", "effectiveness", "avg")):
        values = [100 * (summary["metrics"][metric].get(c, {}).get("mean") or 0) for c in cats]
        ax.bar([x + (i - 1) * width for x in range(len(cats))], values, width, label=metric.capitalize())
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels([f"{c}\n(n={acc[c]['n']})" for c in cats], fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("score (%)")
    ax.set_title(summary.get("config", {}).get("set_name", "evaluation"))
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
