"""Training curves for the dashboards: which metrics make which chart, smoothing, and downsampling.

The trainers write one ``metrics.jsonl`` row per logging step
(``training.callbacks.MetricsLogger``); a run of 10,000 steps is 10,000 rows. The browser gets at
most ``max_points`` points per curve, chosen on the server by Largest-Triangle-Three-Buckets
(Steinarsson 2013), which keeps a curve's shape (spikes included) with far fewer points than it has;
the smoothed loss is computed on every point first, then downsampled like the rest. The held-out
``eval_loss`` (SFT with ``eval_fraction``, a row every ``eval_steps``) is a curve of its own on the
loss chart, not smoothed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Point = tuple[float, float]
DEFAULT_POINTS = 400


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    metrics: tuple[str, ...] = ()  # exact metric names
    pattern: str = ""  # or every metric matching this (rewards per dimension)
    smoothed: tuple[str, ...] = ()  # metrics that get an EMA-smoothed copy of their curve


CHARTS = (
    Chart("loss", "Loss", metrics=("loss", "eval_loss"), smoothed=("loss",)),
    Chart("learning_rate", "Learning rate", metrics=("learning_rate",)),
    Chart("grad_norm", "Grad norm", metrics=("grad_norm",)),
    Chart("rewards", "Reward per dimension", metrics=("reward",), pattern=r"^rewards/[^/]+/mean$"),
    Chart("kl", "KL", metrics=("kl",)),
    Chart(
        "completion_length",
        "Completion length",
        metrics=("completions/mean_length", "completions/mean_terminated_length"),
    ),
    Chart(
        "zero_advantage",
        "Zero-advantage groups",
        metrics=("frac_reward_zero_std", "dropped_zero_advantage"),
    ),
    Chart("tokens_per_s", "Tokens per second", metrics=("tokens_per_s",)),
    # the MTP stage: cross-entropy and top-1 accuracy of each draft step k (training.mtp_trainer)
    Chart("draft_loss", "Draft loss per step k", pattern=r"^loss_step_\d+$"),
    Chart("draft_accuracy", "Draft top-1 accuracy per step k", pattern=r"^accuracy_step_\d+$"),
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
    """At most ``max_points`` of ``points`` (sorted by x) keeping the curve's shape; first and last
    kept."""
    import numpy as np

    xy = np.asarray(points, dtype=float).reshape(-1, 2)
    return [points[i] for i in lttb_indices(xy[:, 0], xy[:, 1], max_points)]


def lttb_indices(x, y, max_points: int) -> list[int]:
    """Which of the points (numpy arrays ``x`` sorted, ``y``) Largest-Triangle-Three-Buckets
    keeps."""
    import numpy as np

    n = len(x)
    if max_points >= n:
        return list(range(n))
    if max_points < 3:
        return [0, n - 1][: max(1, max_points)]
    # bucket i (of max_points - 2) spans [edges[i], edges[i + 1]) of the points between the first
    # and last
    edges = (np.floor(np.arange(max_points - 1) * ((n - 2) / (max_points - 2))) + 1).astype(int)
    edges[-1] = n - 1
    # each bucket's point is chosen against the average of the next bucket (the last point for the
    # last one)
    counts = np.diff(edges)
    avg_x = np.append((np.add.reduceat(x[: n - 1], edges[:-1]) / counts)[1:], x[-1])
    avg_y = np.append((np.add.reduceat(y[: n - 1], edges[:-1]) / counts)[1:], y[-1])
    chosen = [0]
    a = 0
    for i in range(max_points - 2):
        lo, hi = edges[i], edges[i + 1]
        ax, ay = x[a], y[a]
        area = np.abs((ax - avg_x[i]) * (y[lo:hi] - ay) - (ax - x[lo:hi]) * (avg_y[i] - ay))
        a = lo + int(area.argmax())
        chosen.append(a)
    chosen.append(n - 1)
    return chosen


_NUMBERS = (int, float)


def columns_of(rows: Sequence[dict]) -> dict[str, Any]:
    """Rows as one float column per metric: the finite-or-not number of each row, NaN where a row
    has none (json reads NaN and Infinity; a boolean or a string is not a value)."""
    import numpy as np

    n = len(rows)
    columns: dict[str, list] = {}
    for i, row in enumerate(rows):
        for key, value in row.items():
            if type(value) in _NUMBERS:
                column = columns.get(key)
                if column is None:
                    column = columns[key] = [np.nan] * n
                column[i] = value
    return {key: np.asarray(values, dtype=float) for key, values in columns.items()}


def curves(rows: Sequence[dict], *, max_points: int = DEFAULT_POINTS) -> list[dict]:
    """The charts that have data: ``[{key, title, series: [{name, points: [[x, y], ...], n}]}]``.

    ``rows`` carry ``x`` (the step across the run's stages) and the metrics."""
    columns = columns_of(rows)
    return curves_from_columns(columns.pop("x", None), columns, max_points=max_points)


def curves_from_columns(
    xs, columns: dict, *, max_points: int = DEFAULT_POINTS, stages: Sequence[dict] = ()
) -> list[dict]:
    """``curves`` of metrics held as columns: ``xs`` (the step across the run's stages, sorted) and
    one float array per metric, NaN where a row has no value.

    ``stages``: a pipeline's stage boundaries ``[{x, name}]`` (where each stage's steps start). Each
    stage's part of a metric is then a series of its own (``"loss · general_opd"``) on its own y
    axis (``axis``: the stage's index, ``axis_title``: its name): an SFT loss of 10 and an OPD loss
    near 0 on one axis would draw the OPD curve as a flat line."""
    import numpy as np

    if xs is None or not len(xs):
        return []
    xs = np.asarray(xs, dtype=float)
    parts = [(None, None, np.ones(len(xs), dtype=bool))]
    if len(stages) > 1:
        starts = [float(stage["x"]) for stage in stages]
        ends = starts[1:] + [float("inf")]
        parts = [
            (index, stage["name"], (xs > start if index else xs >= start) & (xs <= end))
            for index, (stage, start, end) in enumerate(zip(stages, starts, ends, strict=True))
        ]
    charts = []
    for chart in CHARTS:
        metrics = [m for m in chart.metrics if m in columns]
        if chart.pattern:
            metrics += sorted(n for n in columns if re.match(chart.pattern, n))
        series = []
        for metric in metrics:
            for axis, stage, inside in parts:
                values = columns[metric]
                keep = np.isfinite(values) & inside
                x, y = xs[keep], values[keep]
                if not len(x):
                    continue
                name = metric if stage is None else f"{metric} · {stage}"
                extra = {} if stage is None else {"axis": axis, "axis_title": stage}
                chosen = lttb_indices(x, y, max_points)
                series.append(
                    {
                        "name": name,
                        "n": len(x),
                        "points": np.column_stack((x[chosen], y[chosen])).tolist(),
                        **extra,
                    }
                )
                if metric in chart.smoothed and len(x) > 2:
                    smooth = np.asarray(ema(y.tolist()))
                    chosen = lttb_indices(x, smooth, max_points)
                    series.append(
                        {
                            "name": f"{name} (smoothed)",
                            "n": len(x),
                            "points": np.column_stack((x[chosen], smooth[chosen])).tolist(),
                            **extra,
                        }
                    )
        if series:
            charts.append({"key": chart.key, "title": chart.title, "series": series})
    return charts
