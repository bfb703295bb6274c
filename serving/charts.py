"""Charts and tables beside a replay run: latency CDF (PNG) and a Table-5-style Markdown table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from serving.metrics import METRIC_LABELS, latency_cdf


def format_figure(key: str, value: Any) -> str:
    """A figure as the table shows it: shares in %, latencies in seconds to the millisecond."""
    if value is None:
        return "n/a"
    if key in ("share_within_sla", "success_rate", "answered_rate", "fallback_rate"):
        return f"{100 * value:.1f}%"
    if key in ("wall_p50_s", "wall_p95_s", "ttft_p50_s", "ttft_p95_s"):
        return f"{value:.3f}"
    if key in ("calls_per_request",):
        return f"{value:.2f}"
    return f"{value:.1f}"


def table_markdown(summary: dict[str, Any]) -> str:
    """One row per concurrency level, the report's Table 5 columns."""
    sla = summary.get("sla_s", 15.0)
    labels = dict(METRIC_LABELS, share_within_sla=f"<= {sla:g} s")
    header = ["Route", "Checkpoint", "C", "n", *labels.values()]
    lines = [
        f"Deployment replay `{summary['run_id']}`: Harness `{summary['harness_digest'][:12]}`, "
        f"cases `{summary['case_manifest_digest'][:12]}`, "
        f"temperature {summary['generation']['temperature']}, "
        f"top-p {summary['generation']['top_p']}.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i < 2 else "---:" for i in range(len(header))) + "|",
    ]
    for level, metrics in summary["levels"].items():
        row = [
            summary["route"],
            str(summary.get("checkpoint") or ""),
            str(level),
            str(metrics["n_measured"]),
        ]
        row += [format_figure(key, metrics.get(key)) for key in labels]
        lines.append("| " + " | ".join(row) + " |")
    spec = [
        (level, m["speculative"]) for level, m in summary["levels"].items() if m.get("speculative")
    ]
    if spec:
        lines += [
            "",
            "Speculative decoding (MTP draft head), per level, warm-up included: "
            + "; ".join(
                f"C={level}: acceptance length {format_figure('x', s.get('acceptance_length'))}"
                + (
                    f" of {len(s['acceptance_rate_per_position']) + 1}, rate "
                    f"{100 * s['acceptance_rate']:.1f}%"
                    if s.get("acceptance_rate") is not None
                    else ""
                )
                for level, s in spec
            )
            + ".",
        ]
    from serving.metrics import fallback_warning

    warning = fallback_warning(summary["levels"])
    if warning:
        lines += ["", f"**Warning:** {warning}."]
    lines += [
        "",
        "Success = final answer returned (a Harness fallback "
        "reply counts, and is also shown as Fallback); "
        "Answered = the agent's own final answer (no fallback), over all measured requests; "
        "wall percentiles over successful requests; the SLA share and success over all measured "
        "requests (errors and timeouts count against "
        "both); TTFT of each request's first model call; "
        "decode tok/s = (output tokens - 1) / (call latency - TTFT), mean over calls.",
    ]
    return "\n".join(lines) + "\n"


def latency_cdf_png(
    *, records: list[dict[str, Any]], path: str | Path, title: str, sla_s: float = 15.0
) -> Path:
    """Wall-clock latency CDF, one line per concurrency level, over all measured requests.

    Failed requests never reach 1.0 on the y axis: the curve's top is the share of
    successful requests, so the chart shows failures instead of hiding them.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    longest = sla_s
    for level, curve in latency_cdf(records).items():
        if not curve["points"]:
            continue  # nothing succeeded at this level: no curve (the table says 0%)
        walls = [p[0] for p in curve["points"]]
        longest = max(longest, walls[-1])
        ax.step(
            [0.0, *walls],
            [0.0, *(p[1] for p in curve["points"])],
            where="post",
            label=f"C={level} (n={curve['n']})",
        )
    ax.axvline(sla_s, color="grey", linestyle="--", linewidth=1)
    ax.text(sla_s, 0.97, f"{sla_s:g} s ", color="grey", ha="right", va="top")
    ax.set_xlabel("wall-clock latency per request (s)")
    ax.set_ylabel("share of measured requests")
    ax.set_ylim(0, 1.02)
    ax.set_xlim(0, longest * 1.08)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
