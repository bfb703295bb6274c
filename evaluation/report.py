"""Reports of an evaluation run: Markdown and per-category bar charts (PNG) of its summary.

The summary itself (``evaluation.summary.summarize``) is the one every loop
and page shows; this module only renders it for ``report.md`` and
``category_bars.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluation.summary import fallback_warning, outcome_line

METRICS = ("accuracy", "effectiveness", "avg", "rubric_avg")


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"


def _scopes(summary: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [*sorted(summary["per_category"].items()), ("ALL", summary["overall"])]


def markdown(summary: dict[str, Any]) -> str:
    cfg = summary.get("config", {})
    overall, latency = summary["overall"], summary["latency_s"]
    warning = fallback_warning(summary)
    lines = [f"# Evaluation run: {cfg.get('set_name', '?')}", ""]
    if warning:
        lines += [f"> **Warning: {warning}.**", ""]
    lines += [
        f"Accuracy {_fmt(overall.get('accuracy'))} · "
        f"Effectiveness {_fmt(overall.get('effectiveness'))} · "
        f"AVG {_fmt(overall.get('avg'))} · {summary['failed']} of {summary['n']} failed",
        "",
        f"- Outcomes: {outcome_line(summary)}",
        f"- Harness: {cfg.get('harness_name', '?')} ({str(cfg.get('harness_digest', ''))[:12]})",
        f"- Policy: {cfg.get('policy', '?')}; judge: {cfg.get('judge', '?')}",
        f"- Cases: {summary['n']} (errors: {summary['errors']})"
        + (" - unfinished run" if cfg.get("partial") else ""),
        f"- Latency per case: p50 {_seconds(latency['p50'])}, p95 {_seconds(latency['p95'])}",
        "",
        "| category | n | Accuracy | Effectiveness | AVG | rubric AVG |",
        "|---|---|---|---|---|---|",
    ]
    for cat, block in _scopes(summary):
        lines.append(
            f"| {cat} | {block['n']} | " + " | ".join(_fmt(block.get(m)) for m in METRICS) + " |"
        )
    if summary["per_split"]:
        lines += [
            "",
            "| split | n | Accuracy | Effectiveness | AVG | rubric AVG |",
            "|---|---|---|---|---|---|",
        ]
        for name, block in sorted(summary["per_split"].items()):
            lines.append(
                f"| {name} | {block['n']} | "
                + " | ".join(_fmt(block.get(m)) for m in METRICS)
                + " |"
            )
    o = summary["outcomes"]
    lines += ["", "## How the requests ended", "", "| outcome | cases |", "|---|---|"]
    lines += [
        f"| {name} | {o[name]} |"
        for name in ("replied", "effective", "fallback", "suppressed", "silent", "error")
    ]
    if summary["reason_counts"]:
        lines += ["", "## Reason codes", "", "| code | cases |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in summary["reason_counts"].items()]
    return "\n".join(lines) + "\n"


def category_chart(summary: dict[str, Any], path: str | Path) -> Path:
    """Grouped bars of Accuracy, Effectiveness and AVG per category, written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scopes = _scopes(summary)
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(scopes)), 4))
    width = 0.27
    for i, metric in enumerate(("accuracy", "effectiveness", "avg")):
        values = [block.get(metric) or 0 for _, block in scopes]
        ax.bar(
            [x + (i - 1) * width for x in range(len(scopes))],
            values,
            width,
            label=metric.capitalize(),
        )
    ax.set_xticks(range(len(scopes)))
    ax.set_xticklabels([f"{c}\n(n={block['n']})" for c, block in scopes], fontsize=7)
    ax.set_ylim(0, 100)
    ax.set_ylabel("score (%)")
    title = summary.get("config", {}).get("set_name", "evaluation")
    ax.set_title(f"{title} - MOSTLY FALLBACK" if summary.get("mostly_fallback") else title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
