"""A training run's metrics as the dashboards read them: its stage folders, each metrics.jsonl as
columns (``Metrics``), parsed once per change and then only from where the last read ended, and the
run's progress with the time left.

The rows are those of the one reader of the file (``training.runs.parse_metrics``: a half-written
last line waits for the next read), turned into columns here; there is no second parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from studio.durations import time_left
from studio.filecache import FileCache
from studio.training.models import TrainingRun


@dataclass(frozen=True)
class StageFolder:
    """One folder that a trainer writes metrics.jsonl into, and how many steps it will train."""

    name: str
    path: Path
    total_steps: int


def stage_folders(*, run: TrainingRun) -> list[StageFolder]:
    """The trainer folders of a run, in the order they train (a pipeline's stages one by one)."""
    folders = []
    for step in run.steps if run.is_training else []:
        config = run.config.get(step["name"], {})
        output = run.path / step["output"]
        if step["name"].startswith(TrainingRun.PIPELINE):
            for stage in config.get("stages", []):
                section = config.get(stage, {})
                folders.append(
                    StageFolder(f"{step['name']}/{stage}", output / stage, _steps_of(section))
                )
        else:
            folders.append(StageFolder(step["name"], output, _steps_of(config)))
    return folders


def _steps_of(config: dict[str, Any]) -> int:
    return int(config.get("stop_after_steps") or config.get("max_steps") or 1)


@dataclass
class Metrics:
    """A metrics.jsonl as columns: the step of each row (the rows with an integer step, in file
    order), one float array per numeric metric (NaN where a row has none) and what progress needs of
    the rows."""

    steps: Any  # numpy int64 array
    columns: dict[str, Any]  # metric -> numpy float64 array, as long as steps
    # the first and last rows' "time" (an ISO string as the loggers write it)
    first_time: Any = None
    last_time: Any = None
    last_loss: float | None = None  # the loss of the last row that logged one

    def __len__(self) -> int:
        return len(self.steps)

    @classmethod
    def empty(cls) -> Metrics:
        import numpy as np

        return cls(np.zeros(0, dtype=np.int64), {})

    @classmethod
    def joined(cls, parts: list[Metrics], *, offsets: list[int] | None = None) -> Metrics:
        """The parts one after another (``offsets`` added to each part's steps), missing metrics
        NaN."""
        import numpy as np

        parts_offsets = list(zip(parts, offsets or [0] * len(parts), strict=True))
        parts_offsets = [(p, o) for p, o in parts_offsets if len(p)]
        if not parts_offsets:
            return cls.empty()
        if len(parts_offsets) == 1 and not parts_offsets[0][1]:
            return parts_offsets[0][0]
        names = dict.fromkeys(name for p, _ in parts_offsets for name in p.columns)
        columns = {
            name: np.concatenate(
                [
                    p.columns[name] if name in p.columns else np.full(len(p), np.nan)
                    for p, _ in parts_offsets
                ]
            )
            for name in names
        }
        losses = [p.last_loss for p, _ in parts_offsets if p.last_loss is not None]
        return cls(
            np.concatenate([p.steps + o for p, o in parts_offsets]),
            columns,
            first_time=parts_offsets[0][0].first_time,
            last_time=parts_offsets[-1][0].last_time,
            last_loss=losses[-1] if losses else None,
        )


def _last_loss(columns: dict[str, Any]) -> float | None:
    import numpy as np

    loss = columns.get("loss")
    if loss is None:
        return None
    finite = np.flatnonzero(np.isfinite(loss))
    return float(loss[finite[-1]]) if len(finite) else None


def metrics_columns(*, data: bytes) -> Metrics:
    """JSON lines of a metrics.jsonl as ``Metrics``: the rows of the file's one reader
    (``training.runs.parse_metrics``, which leaves out a line that is not a JSON object), those
    without an integer step left out."""
    import numpy as np

    from studio.training.series import columns_of
    from training.runs import parse_metrics

    rows = [row for row in parse_metrics(data) if type(row.get("step")) is int] if data else []
    if not rows:
        return Metrics.empty()
    columns = columns_of(rows)
    columns.pop("step", None)
    return Metrics(
        np.array([row["step"] for row in rows], dtype=np.int64),
        columns,
        first_time=rows[0].get("time"),
        last_time=rows[-1].get("time"),
        last_loss=_last_loss(columns),
    )


@dataclass
class _Parsed:
    inode: int
    offset: int  # bytes parsed: up to the end of the last complete line
    mtime_ns: int
    metrics: Metrics


_PARSED = FileCache(
    "metrics-parsed", alias="local"
)  # path -> _Parsed (numpy columns: this process only)


def stage_metrics(*, path: Path) -> Metrics:
    """metrics.jsonl as columns, parsed once: a file that grew is read from where the last read
    ended (a running trainer appends a row per step), one that shrank (a resume drops the rows after
    its checkpoint) is read again. A torn last line is left for the next read. Callers must not
    change it."""
    try:
        stat = path.stat()
    except OSError:
        return Metrics.empty()
    parsed = _PARSED.get(str(path))
    if parsed is not None and parsed.inode == stat.st_ino and stat.st_size >= parsed.offset:
        if stat.st_size == parsed.offset and stat.st_mtime_ns == parsed.mtime_ns:
            return parsed.metrics
        before, start = parsed.metrics, parsed.offset
    else:
        before, start = Metrics.empty(), 0
    with path.open("rb") as handle:
        handle.seek(start)
        data = handle.read()
    end = data.rfind(b"\n") + 1
    metrics = Metrics.joined([before, metrics_columns(data=data[:end])])
    _PARSED.put(str(path), _Parsed(stat.st_ino, start + end, stat.st_mtime_ns, metrics))
    return metrics


def run_metrics(*, run: TrainingRun) -> tuple[Metrics, list[dict]]:
    """(the run's metrics with steps counted across its stages, stage boundaries [{x, name}])."""
    parts, offsets, boundaries, offset = [], [], [], 0
    folders = stage_folders(run=run)
    for folder in folders:
        if len(folders) > 1:
            boundaries.append({"x": offset, "name": folder.name})
        parts.append(stage_metrics(path=folder.path / "metrics.jsonl"))
        offsets.append(offset)
        offset += folder.total_steps
    return Metrics.joined(parts, offsets=offsets), boundaries


@dataclass(frozen=True)
class Progress:
    steps_done: int
    steps_total: int
    eta_s: float | None
    last: dict[str, Any]

    @property
    def percent(self) -> int:
        return min(100, int(100 * self.steps_done / self.steps_total)) if self.steps_total else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps_done": self.steps_done,
            "steps_total": self.steps_total,
            "percent": self.percent,
            "eta_s": self.eta_s,
            "eta": time_left(self.eta_s),
            "loss": self.last.get("loss"),
        }


def _when(row: dict) -> datetime | None:
    try:
        return datetime.fromisoformat(row["time"])
    except (KeyError, TypeError, ValueError):
        return None


def run_progress(*, run: TrainingRun) -> Progress:
    """Steps trained of all the run's stages, and the time left at the pace of this stage's logged
    steps."""
    done = total = 0
    eta = None
    last: dict[str, Any] = {}
    for folder in stage_folders(run=run):
        metrics = stage_metrics(path=folder.path / "metrics.jsonl")
        step = int(metrics.steps.max()) if len(metrics) else 0
        total += folder.total_steps
        done += min(step, folder.total_steps)
        if len(metrics) and step < folder.total_steps:
            first_step, latest_step = int(metrics.steps[0]), int(metrics.steps[-1])
            t0, t1 = _when({"time": metrics.first_time}), _when({"time": metrics.last_time})
            if t0 and t1 and latest_step > first_step:
                per_step = (t1 - t0).total_seconds() / (latest_step - first_step)
                eta = per_step * (folder.total_steps - step)
        if metrics.last_loss is not None:
            last = {"loss": metrics.last_loss}
    return Progress(done, total, eta, last)
