"""Reads for the replay dashboards: the replays the studio ran, one replay's figures, two side by
side.

A replay is a ``TrainingRun`` of kind "replay" (started from the training app's form); its folder
``RUN/replay/`` is written by ``python -m serving replay``. Every figure is the serving library's
own: ``serving.record.read_run`` reads the folder and recomputes the summary with
``serving.metrics`` (wall and TTFT percentiles, decode tok/s, SLA share, success and fallback
rates, the speculative counters per level), ``serving.metrics.latency_cdf`` gives the curve and
``serving.compare.compare_summaries`` the differences. The studio only picks, bounds and lays out.

Bounded: requests.jsonl is read up to ``REQUESTS_READ_BYTES`` (the page says when a file holds
more), each CDF keeps ``CDF_POINTS`` points per level, and what a folder gives is kept per change
of its files (size and mtime), a few folders at a time, without the raw records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db.models import QuerySet

from studio.filecache import FileCache, file_stats
from studio.jobs.fallback import replay_flag
from studio.training.models import TrainingRun

REQUESTS_READ_BYTES = 16 * 1024 * 1024
CDF_POINTS = 200
LEVEL_FIGURES = (
    "wall_p50_s",
    "wall_p95_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "decode_tokens_per_s",
    "share_within_sla",
    "success_rate",
    "answered_rate",
    "fallback_rate",
)
"""The figures of a level the dashboard and the comparison show, in column order."""


class ReplayNotFound(LookupError):
    """No run with this id."""


class NotAReplay(ValueError):
    """The run exists but is not a deployment replay."""


def replay_list(*, limit: int = 200) -> QuerySet[TrainingRun]:
    return TrainingRun.objects.filter(kind=TrainingRun.REPLAY).select_related(
        "job", "created_by", "harness_version__harness"
    )[:limit]


def replay_get(*, run_id: int) -> TrainingRun:
    """The replay run ``run_id``; ReplayNotFound or NotAReplay (naming its kind) otherwise."""
    run = (
        TrainingRun.objects.select_related("job", "created_by", "harness_version__harness")
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        raise ReplayNotFound(f"no run #{run_id}")
    if run.kind != TrainingRun.REPLAY:
        raise NotAReplay(
            f"run #{run_id} is a {run.get_kind_display()} run, not a deployment replay"
        )
    return run


@dataclass
class ReplayRow:
    """One line of the replay list: what its stored summary says (no folder is read for the
    list)."""

    run: TrainingRun
    route: str
    checkpoint: str
    harness_version: Any
    harness_digest: str
    levels: list[tuple[str, float | None]]  # (level, wall P95), or the planned levels with None
    fallback_flag: str = ""  # studio.jobs.fallback's flag when a level's requests mostly fell back

    @property
    def state(self) -> str:
        return replay_state(run=self.run)[0]


def replay_rows(*, limit: int = 200) -> list[ReplayRow]:
    from studio.harnesses.models import HarnessVersion

    rows = []
    for run in replay_list(limit=limit):
        stored = (run.summary or {}).get("replay") or {}
        config = run.config.get("replay", {}) if isinstance(run.config, dict) else {}
        if stored.get("levels"):
            levels = [
                (level, figures.get("wall_p95_s")) for level, figures in stored["levels"].items()
            ]
        else:
            levels = [(str(level), None) for level in config.get("concurrency", [])]
        rows.append(
            ReplayRow(
                run=run,
                route=stored.get("route") or config.get("route") or run.model,
                checkpoint=stored.get("checkpoint") or "",
                harness_version=run.harness_version,
                harness_digest=stored.get("harness_digest") or "",
                levels=levels,
                fallback_flag=replay_flag(stored.get("levels") or {}),
            )
        )
    digests = {r.harness_digest for r in rows if r.harness_version is None} - {""}
    versions = {
        v.digest: v
        for v in HarnessVersion.objects.filter(digest__in=digests).select_related("harness")
    }
    for row in rows:
        row.harness_version = row.harness_version or versions.get(row.harness_digest)
    return rows


def replay_time_estimate(
    *, route: str, concurrency: list[int], warmup: int, measured: int, request_timeout: float
) -> dict[str, Any]:
    """How long a replay of these settings would take, for its form: each level runs warm-up +
    measured requests C at a time, so about ceil(n / C) request times. The request time is the wall
    P50 the newest finished replay on the same route measured at that level (its lowest level's
    where it did not run this one); with none, only the bound every request's timeout sets.
    {"requests", "estimate", "basis"}."""
    import math

    from studio.durations import about

    per_level = warmup + measured
    rounds = {c: math.ceil(per_level / c) for c in concurrency if c > 0}
    requests = per_level * len(rounds)

    for run in replay_list(limit=50):
        stored = (run.summary or {}).get("replay") or {}
        levels = {str(k): v for k, v in (stored.get("levels") or {}).items() if isinstance(v, dict)}
        walls = {
            k: v.get("wall_p50_s")
            for k, v in levels.items()
            if isinstance(v.get("wall_p50_s"), int | float)
        }
        if (
            stored.get("route") != route
            or not walls
            or run.job is None
            or run.job.status != run.job.SUCCEEDED
        ):
            continue
        lowest = walls[min(walls, key=int)]
        seconds = sum(n * walls.get(str(c), lowest) for c, n in rounds.items())
        return {
            "requests": requests,
            "estimate": about(seconds),
            "basis": f"from training run #{run.pk} on {route}: wall P50 "
            + ", ".join(
                f"C={k}: {v:.2f} s" for k, v in sorted(walls.items(), key=lambda i: int(i[0]))
            ),
        }
    bound = sum(rounds.values()) * request_timeout
    return {
        "requests": requests,
        "estimate": f"at most {about(bound)}",
        "basis": f"no replay on {route} has finished yet to "
        "measure from; every request is cut at the "
        f"request timeout ({request_timeout:g} s)",
    }


def replay_state(*, run: TrainingRun) -> tuple[str, str]:
    """(state, sentence): queued, running, finished, failed or cancelled, from the run's job."""
    job = run.job
    if job is None:
        return "failed", "the run has no job (it was never queued)"
    if job.status == job.QUEUED:
        from studio.jobs.selectors import job_wait

        return "queued", f"queued: {job_wait(job=job).sentence}"
    if job.is_active:
        return (
            "running",
            "running: the figures below are of the requests "
            "measured so far; the page updates itself",
        )
    if job.status == job.CANCELLED:
        return (
            "cancelled",
            f"cancelled{': ' + job.error if job.error else ''}; what it measured before is below",
        )
    if job.status == job.FAILED:
        return "failed", f"failed: {job.error or 'the job ended with an error'}"
    return "finished", "every planned level was measured; the figures below are final"


# -- one replay's folder
# -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FolderFigures:
    """What a replay folder gives the dashboard (without its raw records)."""

    meta: dict[str, Any]
    summary: dict[str, Any]
    cdf: dict[int, dict[str, Any]]
    records_read: int
    bytes_read: int
    bytes_total: int
    capped: bool


_FIGURES = FileCache(
    "replay-figures"
)  # a folder's figures, once per change of run.json or requests.jsonl


def folder_figures(
    *, folder: Path, max_bytes: int | None = None, cdf_points: int | None = None
) -> FolderFigures:
    """The figures of a replay folder through serving's readers (requests.jsonl read up to
    ``max_bytes``, REQUESTS_READ_BYTES by default); RunRecordError says why there are none."""
    from serving.metrics import latency_cdf
    from serving.record import read_run

    max_bytes = max_bytes or REQUESTS_READ_BYTES
    cdf_points = cdf_points or CDF_POINTS

    def compute() -> FolderFigures:
        read = read_run(folder, max_request_bytes=max_bytes)
        return FolderFigures(
            meta=read.meta,
            summary=read.summary,
            cdf=latency_cdf(read.requests.records, max_points=cdf_points),
            records_read=len(read.requests.records),
            bytes_read=read.requests.bytes_read,
            bytes_total=read.requests.bytes_total,
            capped=read.requests.capped,
        )

    key = (file_stats(folder / "run.json", folder / "requests.jsonl"), max_bytes, cdf_points)
    return _FIGURES.get_or_compute(key, compute)


@dataclass
class ReplayDashboard:
    run: TrainingRun
    state: str
    state_text: str
    problem: str = ""
    """Why the folder gives no figures ('' when it does)."""
    figures: FolderFigures | None = None
    levels: list[dict[str, Any]] = field(default_factory=list)
    charts: list[dict[str, Any]] = field(default_factory=list)
    read_note: str = ""
    command: str = ""
    harness_version: Any = None

    @property
    def meta(self) -> dict[str, Any]:
        return self.figures.meta if self.figures else {}

    @property
    def summary(self) -> dict[str, Any]:
        return self.figures.summary if self.figures else {}

    @property
    def active(self) -> bool:
        return self.state in ("queued", "running")


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def replay_dashboard(
    *, run: TrainingRun, max_bytes: int | None = None, cdf_points: int | None = None
) -> ReplayDashboard:
    """Everything the dashboard shows of one replay: state, figures per level, charts, the run
    record."""
    from serving.record import RunRecordError
    from studio.harnesses.models import HarnessVersion
    from studio.training.services import command_text

    state, state_text = replay_state(run=run)
    board = ReplayDashboard(
        run=run,
        state=state,
        state_text=state_text,
        command=" && ".join(command_text(argv=step["argv"]) for step in run.steps),
        harness_version=run.harness_version,
    )
    folder = run.replay_dir
    if not folder.is_dir():
        board.problem = (
            f"{folder} does not exist yet: the worker has not opened the route"
            if board.active
            else f"{folder} is missing: the replay left no record on this host "
            "(a TRAINING_RUNS_DIR not shared with the worker, or a folder removed since)"
        )
        return board
    try:
        figures = folder_figures(folder=folder, max_bytes=max_bytes, cdf_points=cdf_points)
    except (RunRecordError, OSError) as error:
        board.problem = (
            f"nothing to show yet: {error}"
            if board.active
            else f"the replay folder cannot be read: {error}"
        )
        return board
    board.figures = figures
    meta, summary = figures.meta, figures.summary
    if (
        meta.get("status") == "aborted" and state == "finished"
    ):  # the record knows better than the job
        board.state, board.state_text = "failed", f"failed: {meta.get('error')}"
    ended = {str(level.get("concurrency")) for level in meta.get("levels") or []}
    for level, values in summary["levels"].items():
        spec = values.get("speculative") or {}
        board.levels.append(
            {
                "concurrency": level,
                "n_measured": values["n_measured"],
                "n_success": values["n_success"],
                "failures": values.get("failures") or {},
                "figures": [(k, values.get(k)) for k in LEVEL_FIGURES],
                "speculative": spec,
                "done": level in ended,
            }
        )
    planned = [str(c) for c in meta.get("concurrency") or []]
    not_read = [c for c in planned if c not in summary["levels"]]
    if figures.capped:
        board.read_note = (
            f"requests.jsonl holds {_mib(figures.bytes_total)}; the dashboard read its first "
            f"{_mib(figures.bytes_read)} ({figures.records_read} "
            "requests), so the figures and curves "
            "are of those requests"
            + (f" and level(s) {', '.join(not_read)} are not shown" if not_read else "")
            + ". `python -m serving report "
            f"{folder}` recomputes summary.json and table.md from the whole file."
        )
    digest = (meta.get("harness") or {}).get("digest")
    if board.harness_version is None and digest:
        board.harness_version = (
            HarnessVersion.objects.filter(digest=digest).select_related("harness").first()
        )
    board.charts = _charts(summary, figures.cdf)
    return board


def _charts(summary: dict[str, Any], cdf: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Chart data in the training dashboard's shape: [{key, title, series: [{name, points, n}]}]."""
    levels = summary["levels"]

    def by_level(key: str) -> list[list[float]]:
        return [
            [int(level), values[key]]
            for level, values in levels.items()
            if values.get(key) is not None
        ]

    latency = {
        "key": "latency",
        "title": "Latency vs concurrency (s)",
        "x_label": "concurrency",
        "y_label": "seconds",
        "x_step": 1,
        "series": [],
    }
    for key, name in (
        ("wall_p50_s", "wall P50"),
        ("wall_p95_s", "wall P95"),
        ("ttft_p50_s", "TTFT P50"),
        ("ttft_p95_s", "TTFT P95"),
    ):
        points = by_level(key)
        latency["series"].append({"name": name, "points": points, "n": len(points)})
    curves = {
        "key": "cdf",
        "title": f"Latency CDF per level (share of measured requests; SLA {summary['sla_s']:g} s)",
        "x_label": "wall-clock latency (s)",
        "y_label": "share",
        "stepped": True,
        "series": [],
    }
    for level, curve in cdf.items():
        curves["series"].append(
            {
                "name": f"C={level} (n={curve['n']})",
                "points": [[0.0, 0.0], *curve["points"]],
                "n": curve["n_success"],
            }
        )
    return [latency, curves]


# -- two replays
# ---------------------------------------------------------------------------------------------


@dataclass
class ReplayComparison:
    a: ReplayDashboard
    b: ReplayDashboard
    levels: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [
            f"{side} (run #{board.run.pk}): {board.problem}"
            for side, board in (("a", self.a), ("b", self.b))
            if board.problem
        ]


def _verdict(row: dict[str, Any]) -> str:
    difference = row["difference"]
    if difference is None:
        return ""
    if difference == 0:
        return "same"
    return "better" if (difference < 0) == row["lower_is_better"] else "worse"


def replay_compare(*, a: TrainingRun, b: TrainingRun) -> ReplayComparison:
    """Both replays per level present in both: each figure's A, B, B - A and B/A
    (serving.compare)."""
    from serving.compare import compare_summaries
    from serving.metrics import FIGURE_LABELS

    comparison = ReplayComparison(a=replay_dashboard(run=a), b=replay_dashboard(run=b))
    if comparison.problems:
        return comparison
    result = compare_summaries(comparison.a.summary, comparison.b.summary, metrics=LEVEL_FIGURES)
    by_level: dict[int, list[dict[str, Any]]] = {}
    for row in result["rows"]:
        by_level.setdefault(row["concurrency"], []).append(
            {**row, "label": FIGURE_LABELS[row["metric"]], "verdict": _verdict(row)}
        )
    for level, rows in by_level.items():
        spec_a = comparison.a.summary["levels"][str(level)].get("speculative") or {}
        spec_b = comparison.b.summary["levels"][str(level)].get("speculative") or {}
        comparison.levels.append(
            {
                "concurrency": level,
                "rows": rows,
                "acceptance": (spec_a.get("acceptance_length"), spec_b.get("acceptance_length")),
            }
        )
    comparison.warnings = list(result["warnings"])
    for side, board in (("A", comparison.a), ("B", comparison.b)):
        if board.read_note:
            comparison.warnings.append(f"{side}: {board.read_note}")
        if board.active:
            comparison.warnings.append(
                f"{side} (run #{board.run.pk}) is still {board.state}: its figures will change"
            )
    return comparison
