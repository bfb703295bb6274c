"""Training curves for the dashboards: which metrics make which chart, smoothing, and downsampling.

The trainers write one ``metrics.jsonl`` row per logging step (``training.runs.MetricsLogger``); a
run of 10,000 steps is 10,000 rows. The browser gets at most ``max_points`` points per curve,
chosen on the server by Largest-Triangle-Three-Buckets (Steinarsson 2013), which keeps a curve's
shape (spikes included) with far fewer points than it has; the smoothed loss is computed on every
point first, then downsampled like the rest.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

Point = tuple[float, float]
DEFAULT_POINTS = 400


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    metrics: tuple[str, ...] = ()        # exact metric names
    pattern: str = ""                     # or every metric matching this (rewards per dimension)
    smoothed: bool = False               # add an EMA-smoothed copy of each curve


CHARTS = (
    Chart("loss", "Loss", metrics=("loss",), smoothed=True),
    Chart("learning_rate", "Learning rate", metrics=("learning_rate",)),
    Chart("grad_norm", "Grad norm", metrics=("grad_norm",)),
    Chart("rewards", "Reward per dimension", metrics=("reward",), pattern=r"^rewards/[^/]+/mean$"),
    Chart("kl", "KL", metrics=("kl",)),
    Chart("completion_length", "Completion length",
          metrics=("completions/mean_length", "completions/mean_terminated_length")),
    Chart("zero_advantage", "Zero-advantage groups",
          metrics=("frac_reward_zero_std", "dropped_zero_advantage")),
    Chart("tokens_per_s", "Tokens per second", metrics=("tokens_per_s",)),
)


def ema(values: Sequence[float], *, weight: float = 0.9) -> list[float]:
    """TensorBoard's smoothing: an exponential moving average, debiased at the start."""
    out, last, norm = [], 0.0, 0.0
    for value in values:
        last = weight * last + (1 - weight) * value
        norm = weight * norm + (1 - weight)
        out.append(last / norm)
    return out


def lttb(points: Sequence[Point], max_points: int) -> list[Point]:
    """At most ``max_points`` of ``points`` (sorted by x) keeping the curve's shape; first and last kept."""
    n = len(points)
    if max_points >= n or max_points < 3:
        return list(points) if max_points >= n else [points[0], points[-1]][: max(1, max_points)]
    out = [points[0]]
    bucket = (n - 2) / (max_points - 2)
    a = 0
    for i in range(max_points - 2):
        start, end = int(math.floor(i * bucket)) + 1, int(math.floor((i + 1) * bucket)) + 1
        nxt_start, nxt_end = end, min(int(math.floor((i + 2) * bucket)) + 1, n)
        nxt = points[nxt_start:nxt_end] or [points[-1]]
        avg_x = sum(p[0] for p in nxt) / len(nxt)
        avg_y = sum(p[1] for p in nxt) / len(nxt)
        ax, ay = points[a]
        best, best_area = start, -1.0
        for j in range(start, min(end, n - 1)):
            x, y = points[j]
            area = abs((ax - avg_x) * (y - ay) - (ax - x) * (avg_y - ay))
            if area > best_area:
                best, best_area = j, area
        out.append(points[best])
        a = best
    out.append(points[-1])
    return out


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def curves(rows: Sequence[dict], *, max_points: int = DEFAULT_POINTS) -> list[dict]:
    """The charts that have data: ``[{key, title, series: [{name, points: [[x, y], ...], n}]}]``.

    ``rows`` carry ``x`` (the step across the run's stages) and the metrics."""
    names: set[str] = set()
    for row in rows:
        names.update(row)
    charts = []
    for chart in CHARTS:
        wanted = [m for m in chart.metrics if m in names]
        if chart.pattern:
            wanted += sorted(n for n in names if re.match(chart.pattern, n))
        series = []
        for metric in wanted:
            points = [(float(row["x"]), y) for row in rows if (y := _number(row.get(metric))) is not None]
            if not points:
                continue
            series.append({"name": metric, "n": len(points), "points": lttb(points, max_points)})
            if chart.smoothed and len(points) > 2:
                smooth = list(zip([p[0] for p in points], ema([p[1] for p in points]), strict=True))
                series.append({"name": f"{metric} (smoothed)", "n": len(points),
                               "points": lttb(smooth, max_points)})
        if series:
            charts.append({"key": chart.key, "title": chart.title, "series": series})
    return charts
