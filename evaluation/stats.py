"""Statistics over per-case scores: category breakdowns, percentiles, the paired bootstrap, judge
calibration.

Everything here takes plain Python lists/dicts of numbers so the runner, the
studio and training can share it. The bootstrap is vectorised with numpy
(10,000 resamples of a 1,000-case set take well under a second);
``paired_bootstrap_reference`` is the slow, loop-by-loop version kept for the
test that checks the fast one against it.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

DEFAULT_RESAMPLES = 10_000
DEFAULT_CONFIDENCE = 0.95
_CHUNK = 1_000  # resamples drawn per block, bounds memory at _CHUNK * n indices


@dataclass(frozen=True)
class CategoryStat:
    """Mean of one metric over the cases of one category."""

    category: str
    n: int
    mean: float


def category_breakdown(
    *, rows: Iterable[Mapping], metric: str, category_key: str = "category"
) -> dict[str, CategoryStat]:
    """Mean of ``metric`` per category plus an ``"ALL"`` entry, sorted by category name.

    Rows whose metric is ``None`` (not scored) are left out of both.
    """
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        value = row.get(metric)
        if value is None:
            continue
        groups[str(row.get(category_key, "unknown"))].append(float(value))
        groups["ALL"].append(float(value))
    return {
        name: CategoryStat(category=name, n=len(values), mean=sum(values) / len(values))
        for name, values in sorted(groups.items())
    }


@dataclass(frozen=True)
class BootstrapResult:
    """Paired bootstrap of mean(candidate) - mean(baseline) over the same items."""

    n: int
    delta: float
    low: float
    high: float
    p_delta_le_zero: float
    resamples: int
    confidence: float

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class MeanInterval:
    """One-sample bootstrap of mean(values): its percentile interval."""

    n: int
    mean: float
    low: float
    high: float
    resamples: int
    confidence: float


def resample_indices(*, n: int, resamples: int, seed: int = 0) -> Iterator[np.ndarray]:
    """The bootstrap's draws: ``resamples`` rows of ``n`` item indices drawn with replacement, in
    blocks of at most ``_CHUNK`` rows (memory stays at ``_CHUNK * n``). The one resampler: the
    paired and one-sample bootstraps use it, and so does a statistic over several paired columns
    (``evaluation.edit_transfer``) that needs every column drawn with the same rows."""
    rng = np.random.default_rng(seed)
    for start in range(0, resamples, _CHUNK):
        yield rng.integers(0, n, size=(min(_CHUNK, resamples - start), n))


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` percentile interval of resampled statistics."""
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def _resampled_means(values: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    means = np.empty(resamples, dtype=np.float64)
    start = 0
    for idx in resample_indices(n=values.size, resamples=resamples, seed=seed):
        means[start : start + len(idx)] = values[idx].mean(axis=1)
        start += len(idx)
    return means


def bootstrap_mean(
    *,
    values: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> MeanInterval:
    """Resample items with replacement; percentile interval of their mean."""
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"a bootstrap of a mean needs a non-empty 1-d score list, got {x.shape}")
    low, high = percentile_interval(_resampled_means(x, resamples, seed), confidence)
    return MeanInterval(
        n=x.size,
        mean=float(x.mean()),
        low=low,
        high=high,
        resamples=resamples,
        confidence=confidence,
    )


def _check_pair(baseline: Sequence[float], candidate: Sequence[float]) -> tuple:
    a = np.asarray(baseline, dtype=np.float64)
    b = np.asarray(candidate, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"paired bootstrap needs two equally long 1-d score lists, got {a.shape} and {b.shape}"
        )
    if a.size == 0:
        raise ValueError("paired bootstrap needs at least one paired item, got none")
    return a, b


def paired_bootstrap(
    *,
    baseline: Sequence[float],
    candidate: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> BootstrapResult:
    """Resample items with replacement; percentile interval of the mean difference.

    ``p_delta_le_zero`` is the share of resampled differences that are <= 0,
    i.e. how often the candidate would not look better than the baseline.
    """
    a, b = _check_pair(baseline, candidate)
    diff = b - a
    deltas = _resampled_means(diff, resamples, seed)
    low, high = percentile_interval(deltas, confidence)
    return BootstrapResult(
        n=diff.size,
        delta=float(diff.mean()),
        low=low,
        high=high,
        p_delta_le_zero=float(np.mean(deltas <= 0.0)),
        resamples=resamples,
        confidence=confidence,
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100), linear interpolation between order statistics (numpy's
    default method); None for no values. The one percentile of the project: run summaries
    (latency p50/p95), the bootstrap interval and the serving replay metrics use it."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q={q} must be within 0..100")
    data = sorted(values)
    if not data:
        return None
    rank = (len(data) - 1) * q / 100.0
    lower = math.floor(rank)
    upper = min(lower + 1, len(data) - 1)
    return data[lower] + (data[upper] - data[lower]) * (rank - lower)


def paired_bootstrap_reference(
    *,
    baseline: Sequence[float],
    candidate: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> BootstrapResult:
    """Slow, obviously-correct bootstrap: one resample and one item at a time.

    Draws its indices from the same generator stream as ``paired_bootstrap``,
    so for equal seeds both must agree to floating-point precision.
    """
    a, b = _check_pair(baseline, candidate)
    n = len(a)
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(resamples):
        idx = rng.integers(0, n, size=n)
        total = 0.0
        for i in idx:
            total += float(b[i]) - float(a[i])
        deltas.append(total / n)
    deltas.sort()
    tail = (1.0 - confidence) / 2.0 * 100.0
    return BootstrapResult(
        n=n,
        delta=sum(float(y) - float(x) for x, y in zip(a, b, strict=True)) / n,
        low=percentile(deltas, tail),
        high=percentile(deltas, 100.0 - tail),
        p_delta_le_zero=sum(1 for d in deltas if d <= 0.0) / resamples,
        resamples=resamples,
        confidence=confidence,
    )


@dataclass
class Calibration:
    """How well a judge's labels agree with human labels on the same cases."""

    n: int
    agreement: float
    kappa: float
    labels: list
    confusion: list[list[int]]  # rows: human label, columns: judge label
    disagreements: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float:
    """Cohen's kappa of (human, judge) label pairs; 1.0 when both raters are constant and equal."""
    n = len(pairs)
    if n == 0:
        raise ValueError("Cohen's kappa needs at least one labelled pair")
    observed = sum(1 for h, j in pairs if h == j) / n
    human = Counter(h for h, _ in pairs)
    judge = Counter(j for _, j in pairs)
    expected = sum(human[label] * judge.get(label, 0) for label in human) / (n * n)
    if expected >= 1.0:
        return 1.0 if observed >= 1.0 else 0.0
    return (observed - expected) / (1.0 - expected)


def calibrate(
    *, human: Mapping[str, Hashable], judge: Mapping[str, Hashable], labels: Sequence | None = None
) -> Calibration:
    """Agreement, kappa, confusion matrix and disagreeing case ids over cases both labelled."""
    ids = sorted(set(human) & set(judge))
    if not ids:
        raise ValueError("no case carries both a human and a judge label")
    pairs = [(human[i], judge[i]) for i in ids]
    if labels is None:
        labels = sorted({x for pair in pairs for x in pair}, key=str)
    index = {label: k for k, label in enumerate(labels)}
    confusion = [[0] * len(labels) for _ in labels]
    for h, j in pairs:
        if h not in index or j not in index:
            raise ValueError(f"label {h!r} or {j!r} is not one of {list(labels)}")
        confusion[index[h]][index[j]] += 1
    disagreements = [
        {"id": i, "human": human[i], "judge": judge[i]} for i in ids if human[i] != judge[i]
    ]
    return Calibration(
        n=len(ids),
        agreement=sum(1 for h, j in pairs if h == j) / len(ids),
        kappa=cohen_kappa(pairs),
        labels=list(labels),
        confusion=confusion,
        disagreements=disagreements,
    )
