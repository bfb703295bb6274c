"""Reads for training runs: lists, a run's metrics and progress, the dashboard data, the checkpoint registry.

A run's facts are read from its folder through the libraries' own readers (``training.runs``'s
metrics and model card, ``evaluation``'s summaries in the eval folder, ``serving.record``'s replay
record); a metrics file is parsed once per change (size and mtime), so a dashboard polled every
few seconds does not re-read 10,000 rows each time.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db.models import QuerySet

from studio.training.models import TrainingRun
from studio.training.series import DEFAULT_POINTS, curves_from_columns


def run_list(*, kind: str | None = None, limit: int = 200) -> QuerySet[TrainingRun]:
    runs = TrainingRun.objects.select_related("job", "created_by", "parent", "harness_version__harness")
    if kind:
        runs = runs.filter(kind=kind)
    return runs[:limit]


def run_get(*, run_id: int) -> TrainingRun:
    return TrainingRun.objects.select_related("job", "created_by", "parent", "harness_version__harness").get(pk=run_id)


# -- metrics ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageFolder:
    """One folder that a trainer writes metrics.jsonl into, and how many steps it will train."""

    name: str
    path: Path
    total_steps: int


def stage_folders(run: TrainingRun) -> list[StageFolder]:
    """The trainer folders of a run, in the order they train (a pipeline's stages one by one)."""
    folders = []
    for step in run.steps if run.is_training else []:
        config = run.config.get(step["name"], {})
        output = run.path / step["output"]
        if step["name"].startswith(TrainingRun.PIPELINE):
            for stage in config.get("stages", []):
                section = config.get(stage, {})
                folders.append(StageFolder(f"{step['name']}/{stage}", output / stage, _steps_of(section)))
        else:
            folders.append(StageFolder(step["name"], output, _steps_of(config)))
    return folders


def _steps_of(config: dict[str, Any]) -> int:
    return int(config.get("stop_after_steps") or config.get("max_steps") or 1)


@dataclass
class Metrics:
    """A metrics.jsonl as columns: the step of each row (the rows with an integer step, in file order),
    one float array per numeric metric (NaN where a row has none) and what progress needs of the rows."""

    steps: Any                       # numpy int64 array
    columns: dict[str, Any]          # metric -> numpy float64 array, as long as steps
    first_time: Any = None           # the first and last rows' "time" (an ISO string as the loggers write it)
    last_time: Any = None
    last_loss: float | None = None   # the loss of the last row that logged one

    def __len__(self) -> int:
        return len(self.steps)

    @classmethod
    def empty(cls) -> Metrics:
        import numpy as np

        return cls(np.zeros(0, dtype=np.int64), {})

    @classmethod
    def joined(cls, parts: list[Metrics], *, offsets: list[int] | None = None) -> Metrics:
        """The parts one after another (``offsets`` added to each part's steps), missing metrics NaN."""
        import numpy as np

        parts_offsets = list(zip(parts, offsets or [0] * len(parts), strict=True))
        parts_offsets = [(p, o) for p, o in parts_offsets if len(p)]
        if not parts_offsets:
            return cls.empty()
        if len(parts_offsets) == 1 and not parts_offsets[0][1]:
            return parts_offsets[0][0]
        names = dict.fromkeys(name for p, _ in parts_offsets for name in p.columns)
        columns = {name: np.concatenate([p.columns[name] if name in p.columns else np.full(len(p), np.nan)
                                         for p, _ in parts_offsets]) for name in names}
        losses = [p.last_loss for p, _ in parts_offsets if p.last_loss is not None]
        return cls(np.concatenate([p.steps + o for p, o in parts_offsets]), columns,
                   first_time=parts_offsets[0][0].first_time, last_time=parts_offsets[-1][0].last_time,
                   last_loss=losses[-1] if losses else None)


def _last_loss(columns: dict[str, Any]) -> float | None:
    import numpy as np

    loss = columns.get("loss")
    if loss is None:
        return None
    finite = np.flatnonzero(np.isfinite(loss))
    return float(loss[finite[-1]]) if len(finite) else None


def _parse_arrow(data: bytes) -> Metrics:
    """Parse a block of JSON lines into columns with pyarrow's reader (C++, straight to columns);
    raises on anything it cannot read exactly as ``_parse_json`` would (then that one is used)."""
    import io

    import pyarrow as pa
    import pyarrow.json as pj

    table = pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(block_size=len(data) + 1),
                         parse_options=pj.ParseOptions(explicit_schema=pa.schema([("time", pa.string())])))
    if "step" not in table.column_names:
        return Metrics.empty()
    if not pa.types.is_integer(table.schema.field("step").type):
        raise ValueError("step: not an integer on every row")  # json keeps the rows that have one
    if table.column("step").null_count:
        table = table.filter(table.column("step").is_valid())
    columns = {}
    for name in table.column_names:
        kind = table.schema.field(name).type
        if name != "step" and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            columns[name] = table.column(name).cast(pa.float64()).to_numpy()
    times = table.column("time").to_pylist() if "time" in table.column_names and table.num_rows else [None]
    return Metrics(table.column("step").to_numpy().astype("int64"), columns, first_time=times[0],
                   last_time=times[-1], last_loss=_last_loss(columns))


def _parse_json(data: bytes) -> Metrics:
    """The same with the standard library, line by line where a line is broken."""
    import numpy as np

    from studio.training.series import columns_of

    lines = [line for line in data.splitlines() if line.strip()]
    try:  # one parse for the whole block (far faster than a call per line); line by line if one is broken
        parsed = json.loads(b"[" + b",".join(lines) + b"]") if lines else []
    except ValueError:
        parsed = []
        for line in lines:
            try:
                parsed.append(json.loads(line))
            except ValueError:
                continue
    rows = [row for row in parsed if isinstance(row, dict) and type(row.get("step")) is int]
    if not rows:
        return Metrics.empty()
    columns = columns_of(rows)
    columns.pop("step", None)
    return Metrics(np.array([row["step"] for row in rows], dtype=np.int64), columns,
                   first_time=rows[0].get("time"), last_time=rows[-1].get("time"), last_loss=_last_loss(columns))


def parse_metrics(data: bytes) -> Metrics:
    """Complete JSON lines of a metrics.jsonl as ``Metrics`` (rows without an integer step left out)."""
    if not data:
        return Metrics.empty()
    try:
        return _parse_arrow(data)
    except Exception:  # noqa: BLE001 - pyarrow missing, NaN, mixed types, a broken line: the exact, slower reader
        return _parse_json(data)


@dataclass
class _Parsed:
    inode: int
    offset: int          # bytes parsed: up to the end of the last complete line
    mtime_ns: int
    metrics: Metrics


_PARSED: OrderedDict[str, _Parsed] = OrderedDict()
_CURVES: OrderedDict[tuple, tuple[str, str]] = OrderedDict()  # (the curves, the eval_loss rows) as JSON
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 128


def _remember(cache: OrderedDict, key, value) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > _CACHE_SIZE:
        cache.popitem(last=False)


def _metrics(path: Path) -> Metrics:
    """metrics.jsonl as columns, parsed once: a file that grew is read from where the last read ended (a
    running trainer appends a row per step), one that shrank (a resume drops the rows after its
    checkpoint) is read again. A torn last line is left for the next read. Callers must not change it."""
    try:
        stat = path.stat()
    except OSError:
        return Metrics.empty()
    with _CACHE_LOCK:
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
    metrics = Metrics.joined([before, parse_metrics(data[:end])])
    with _CACHE_LOCK:
        _remember(_PARSED, str(path), _Parsed(stat.st_ino, start + end, stat.st_mtime_ns, metrics))
    return metrics


def run_metrics(run: TrainingRun) -> tuple[Metrics, list[dict]]:
    """(the run's metrics with steps counted across its stages, stage boundaries [{x, name}])."""
    parts, offsets, boundaries, offset = [], [], [], 0
    folders = stage_folders(run)
    for folder in folders:
        if len(folders) > 1:
            boundaries.append({"x": offset, "name": folder.name})
        parts.append(_metrics(folder.path / "metrics.jsonl"))
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
        return {"steps_done": self.steps_done, "steps_total": self.steps_total, "percent": self.percent,
                "eta_s": self.eta_s, "eta": eta_text(self.eta_s), "loss": self.last.get("loss")}


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    if seconds < 5400:
        return f"about {round(seconds / 60)} min left"
    return f"about {seconds / 3600:.1f} h left"


def _when(row: dict) -> datetime | None:
    try:
        return datetime.fromisoformat(row["time"])
    except (KeyError, TypeError, ValueError):
        return None


def run_progress(run: TrainingRun) -> Progress:
    """Steps trained of all the run's stages, and the time left at the pace of this stage's logged steps."""
    done = total = 0
    eta = None
    last: dict[str, Any] = {}
    for folder in stage_folders(run):
        metrics = _metrics(folder.path / "metrics.jsonl")
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


DASHBOARD_CACHE = "dashboard-cache.json"


def _stat_key(run: TrainingRun, max_points: int) -> list:
    """What the curves depend on: each metrics file's size and mtime (cheap: no read)."""
    key: list = [max_points]
    for folder in stage_folders(run):
        try:
            stat = (folder.path / "metrics.jsonl").stat()
            key.append([folder.name, stat.st_ino, stat.st_size, stat.st_mtime_ns])
        except OSError:
            key.append([folder.name])
    return key


def run_dashboard_json(run: TrainingRun, *, max_points: int = DEFAULT_POINTS, ended: bool = False) -> str:
    """What the dashboard draws, as the JSON the browser gets: downsampled curves, stage boundaries,
    progress, the marks on the curves and whether the run is still going.

    The curves are computed once per change of the run's metrics files and kept as JSON text: in
    memory, and for a run that has ended also in ``RUN/dashboard-cache.json`` (written by the job when
    it ends, or by the first view), so a finished run's first view in any web process reads 150 KB
    instead of parsing 10,000 rows. Kept as text, not as lists of points: a web process holding many
    runs' curves as Python objects pays for them in every full garbage collection (a 200-300 ms stall
    of a random request). ``ended``: the caller knows the run has ended (its job, about to finish)."""
    key = _stat_key(run, max_points)
    active = bool(run.job and run.job.is_active) and not ended
    memo = (run.pk, json.dumps(key))
    with _CACHE_LOCK:
        text, evaluations = _CURVES.get(memo) or (None, "")
    cache_file = run.path / DASHBOARD_CACHE
    if text is None and cache_file.is_file():
        try:  # line 1: what the curves were computed from; line 2: the curves; line 3: the eval_loss rows
            stored_key, _, rest = cache_file.read_text(encoding="utf-8").partition("\n")
            stored, _, evaluations = rest.partition("\n")
            text = stored if stored and evaluations and json.loads(stored_key) == key else None
        except (ValueError, OSError):
            text = None
    if text is None:
        metrics, boundaries = run_metrics(run)
        text = json.dumps({"charts": curves_from_columns(metrics.steps, metrics.columns, max_points=max_points),
                           "boundaries": boundaries, "progress": run_progress(run).as_dict(), "rows": len(metrics)})
        evaluations = json.dumps(stage_eval_losses(run))
        if not active and len(metrics) and max_points == DEFAULT_POINTS:
            _write_cache(cache_file, json.dumps(key) + "\n" + text + "\n" + evaluations)
    with _CACHE_LOCK:
        _remember(_CURVES, memo, (text, evaluations))
    marks = run_marks(run, eval_losses={name: dict(rows) for name, rows in json.loads(evaluations).items()})
    extra = json.dumps({"run": run.pk, "marks": marks, "active": active})
    return text[:-1] + ", " + extra[1:]  # both are JSON objects: one object with the keys of both


def run_dashboard(run: TrainingRun, *, max_points: int = DEFAULT_POINTS, ended: bool = False) -> dict[str, Any]:
    """``run_dashboard_json`` as a dict."""
    return json.loads(run_dashboard_json(run, max_points=max_points, ended=ended))


def stage_eval_losses(run: TrainingRun) -> dict[str, list[tuple[int, float]]]:
    """Each stage folder's held-out evaluations: {stage: [(step, eval_loss), ...]} (stages with none left out)."""
    out = {}
    for folder in stage_folders(run):
        if losses := _eval_losses(_metrics(folder.path / "metrics.jsonl")):
            out[folder.name] = list(losses.items())
    return out


def run_marks(run: TrainingRun, *, eval_losses: dict[str, dict[int, float]] | None = None) -> list[dict[str, Any]]:
    """What the curves mark, at the step across the run's stages: each held-out evaluation (an
    ``eval_loss`` row in metrics.jsonl, SFT with ``eval_fraction``), the checkpoints the trainer keeps
    (``checkpoint-N/``, with the eval_loss of their step when there is one), the best checkpoint of each
    stage (the kept checkpoint-N whose step has the lowest eval_loss; only checkpoints still on disk and
    evaluated at their step count, so a stage without evaluations has none), the final model (its model
    card's steps) with the stage's self-evaluation (``eval.json``, scored once after training), and an
    MTP head's held-out acceptance, measured before training (step 0) and after it (its card.json).
    ``eval_losses``: ``stage_eval_losses`` as {stage: {step: eval_loss}}, kept with the curves (read
    from the metrics files when not given)."""
    from training.runs import checkpoint_step

    if eval_losses is None:
        eval_losses = {name: dict(rows) for name, rows in stage_eval_losses(run).items()}
    marks: list[dict[str, Any]] = []
    offset = 0
    for folder in stage_folders(run):
        losses = eval_losses.get(folder.name, {})
        stage_marks = [{"x": offset + step, "kind": "evaluation", "label": f"eval_loss {loss:.4f}",
                        "stage": folder.name} for step, loss in losses.items()]
        kept: list[tuple[float, int, str]] = []
        for checkpoint in sorted(folder.path.glob("checkpoint-*"), key=checkpoint_step):
            if (checkpoint / "trainer_state.json").is_file():
                step = checkpoint_step(checkpoint)
                label = checkpoint.name
                if step in losses:
                    label += f" (eval_loss {losses[step]:.4f})"
                    kept.append((losses[step], step, checkpoint.name))
                stage_marks.append({"x": offset + step, "kind": "checkpoint", "label": label, "stage": folder.name})
        if kept:
            loss, step, name = min(kept)  # the lowest eval_loss; of equal ones the earliest
            stage_marks.append({"x": offset + step, "kind": "best", "stage": folder.name, "checkpoint": name,
                                "label": f"best checkpoint: {name} (eval_loss {loss:.4f})"})
        marks += sorted(stage_marks, key=lambda m: m["x"])
        card_path = folder.path / "model_card.json"
        if card_path.is_file():
            try:
                card = json.loads(card_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                card = {}
            step = card.get("steps") if isinstance(card.get("steps"), int) else folder.total_steps
            marks.append({"x": offset + step, "kind": "final", "label": "final", "stage": folder.name})
            marks += _evaluation_marks(folder.path, x0=offset, x=offset + step, stage=folder.name)
        offset += folder.total_steps
    return marks


def _eval_losses(metrics: Metrics) -> dict[int, float]:
    """{step: eval_loss} of a stage's finite eval_loss rows, in step order (a step logged twice: its last)."""
    import numpy as np

    values = metrics.columns.get("eval_loss")
    if values is None:
        return {}
    keep = np.flatnonzero(np.isfinite(values))
    return dict(sorted({int(metrics.steps[i]): float(values[i]) for i in keep}.items()))


def _evaluation_marks(path: Path, *, x0: int, x: int, stage: str) -> list[dict[str, Any]]:
    marks = []
    eval_path = path / "eval.json"
    if eval_path.is_file():
        try:
            scores = json.loads(eval_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            scores = {}
        parts = [f"{name} AVG {s['avg']:.1f}" if "avg" in s else f"{name} strict {s.get('prompt_strict', 0):.1f}"
                 for name, s in scores.items() if isinstance(s, dict) and ("avg" in s or "prompt_strict" in s)]
        marks.append({"x": x, "kind": "eval", "label": "self-evaluation: " + ", ".join(parts), "stage": stage})
    head_card = path / "final" / "card.json"
    if head_card.is_file():
        try:
            card = json.loads(head_card.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            card = {}
        for key, at in (("acceptance_held_out_before", x0), ("acceptance_held_out", x)):
            acceptance = card.get(key) or {}
            if isinstance(acceptance.get("acceptance_rate"), int | float):
                marks.append({"x": at, "kind": "eval", "stage": stage,
                              "label": f"held-out acceptance {acceptance['acceptance_rate']:.3f}"
                                       f" (length {acceptance.get('acceptance_length', 0):.2f})"})
    return marks


def _write_cache(path: Path, content: str) -> None:
    import contextlib

    with contextlib.suppress(OSError):  # a read-only or full disk only costs the next view a parse
        tmp = path.with_suffix(".tmp")
        tmp.write_text(content, encoding="utf-8")
        tmp.replace(path)


# -- what a finished run left ----------------------------------------------------------------------------


def read_folder_summary(run: TrainingRun) -> dict[str, Any] | None:
    """The run's result as its folder holds it: model card (+ eval.json), evaluation or replay summary."""
    if run.is_training:
        final = run.final_dir
        card_path = final.parent / "model_card.json" if final else None
        if card_path is None or not card_path.is_file():
            return None
        from training.runs import read_model_card

        summary = {"model_card": read_model_card(final.parent)}
        if run.kind == TrainingRun.MTP:
            from harness.engine.draft import DraftHeadError, read_card

            try:  # the head's own card: the policy it drafts for (path, fingerprint) and its held-out acceptance
                summary["head_card"] = read_card(final)
            except DraftHeadError as error:
                summary["head_card_error"] = str(error)
        eval_path = final.parent / "eval.json"
        if eval_path.is_file():
            summary["self_eval"] = json.loads(eval_path.read_text(encoding="utf-8"))
        return summary
    if run.kind == TrainingRun.ABLATION:
        data = ablation_data(run)
        return {"ablation": {"table": data["table"], "steps": data["steps"]}} if data else None
    if run.kind == TrainingRun.EVAL:
        path = run.path / "eval" / "summary.json"
        return {"evaluation": json.loads(path.read_text(encoding="utf-8"))} if path.is_file() else None
    from serving.record import RunRecordError, load_run

    try:
        meta, summary = load_run(run.path / "replay")
    except RunRecordError:
        return None
    table = run.path / "replay" / "table.md"
    return {"replay": summary, "route": meta.get("route"),
            "table": table.read_text(encoding="utf-8") if table.is_file() else ""}


@dataclass
class CheckpointEntry:
    """One registry row: a training run's final model with its facts and its evaluations."""

    run: TrainingRun
    path: Path
    card: dict[str, Any]
    evaluations: list[TrainingRun]
    harness_version: Any
    draft_head: DraftHeadEntry | None = None
    stale_head: DraftHeadEntry | None = None  # the newest head of its shape made for another policy

    @property
    def stage(self) -> str:
        return self.card.get("stage", self.run.kind)


@dataclass
class DraftHeadEntry:
    """A finished MTP run's head: the policy it was adapted to (its card) and its held-out acceptance."""

    run: TrainingRun
    path: Path
    card: dict[str, Any]
    config: Any  # harness.engine.draft.DraftConfig

    @property
    def acceptance(self) -> dict[str, Any]:
        return self.card.get("acceptance_held_out") or {}


def draft_heads() -> list[DraftHeadEntry]:
    """Every finished studio MTP run's head, newest first, read with the engine's own readers."""
    from harness.engine.draft import DraftHeadError, read_card, read_config

    heads = []
    for run in TrainingRun.objects.filter(kind=TrainingRun.MTP).select_related("job"):
        final = run.final_dir
        if final is None or not (final.parent / "model_card.json").is_file():
            continue  # not finished: a head is only listed once its card is written
        try:
            heads.append(DraftHeadEntry(run=run, path=final, card=read_card(final), config=read_config(final)))
        except DraftHeadError:
            continue
    return heads


def head_for_checkpoint(path: Path, heads: list[DraftHeadEntry]) -> tuple[DraftHeadEntry | None, DraftHeadEntry | None]:
    """(the newest head adapted to the checkpoint at ``path``, the newest head of its shape adapted to another).

    A head is this checkpoint's when its card's ``policy_fingerprint`` is the checkpoint's
    (``harness.checkpoints.fingerprint``, what the SGLang launcher checks) and its dimensions fit the
    checkpoint's config (``policy_mismatch``); one of the same shape made for another policy is stale
    here, but a good start for re-adapting (``init_head``)."""
    from types import SimpleNamespace

    from harness.engine.draft import policy_mismatch

    try:
        policy = SimpleNamespace(**json.loads((path / "config.json").read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None, None
    fits = []
    for head in heads:
        try:
            if not policy_mismatch(head.config, policy):
                fits.append(head)
        except (AttributeError, TypeError):  # a config.json without a model's dimensions
            continue
    if not fits:
        return None, None
    fingerprint = _fingerprint(path)
    if fingerprint is None:
        return None, None
    own = next((h for h in fits if h.card.get("policy_fingerprint") == fingerprint), None)
    stale = next((h for h in fits if h.card.get("policy_fingerprint") != fingerprint), None)
    return own, stale


def _fingerprint(path: Path) -> str | None:
    """``harness.checkpoints.fingerprint`` (every file's digest, kept in memory by file stats, so a view
    that lists the same checkpoints again reads nothing); None when the folder cannot be read."""
    from harness.checkpoints import CheckpointError, fingerprint

    try:
        return fingerprint(path)
    except CheckpointError:
        return None


def checkpoint_registry(*, with_heads: bool = True) -> list[CheckpointEntry]:
    """Every studio training run whose final model exists, newest first, with the evaluations of it
    and (``with_heads``) the draft head adapted to it (a head is not a checkpoint: MTP runs are not rows here)."""
    from studio.harnesses.models import HarnessVersion

    runs = [r for r in run_list(limit=500) if r.is_policy]
    evaluations: dict[int, list[TrainingRun]] = {}
    for evaluation in TrainingRun.objects.filter(kind=TrainingRun.EVAL, parent__isnull=False).select_related("job"):
        evaluations.setdefault(evaluation.parent_id, []).append(evaluation)
    entries = []
    for run in runs:
        final = run.final_dir
        if final is None or not (final / "config.json").is_file():
            continue
        card = (run.summary or {}).get("model_card")
        if card is None:
            card_path = final.parent / "model_card.json"
            card = json.loads(card_path.read_text(encoding="utf-8")) if card_path.is_file() else {}
        entries.append(CheckpointEntry(run=run, path=final, card=card, evaluations=evaluations.get(run.pk, []),
                                       harness_version=run.harness_version))
    # a checkpoint trained outside a studio version still names its Harness by digest: link the version
    digests = {e.card.get("harness_digest") for e in entries if e.harness_version is None} - {None, ""}
    versions = {v.digest: v for v in HarnessVersion.objects.filter(digest__in=digests).select_related("harness")}
    for entry in entries:
        entry.harness_version = entry.harness_version or versions.get(entry.card.get("harness_digest"))
    heads = draft_heads() if with_heads else []
    if heads:  # fingerprints read a checkpoint's first and last MiB: only when there are heads to match
        for entry in entries:
            entry.draft_head, entry.stale_head = head_for_checkpoint(entry.path, heads)
    return entries


def checkpoint_choices() -> list[tuple[str, str]]:
    """(absolute final/ path, label) of the registry's checkpoints, for the forms' model fields."""
    return [(str(entry.path), f"run #{entry.run.pk} {entry.stage}: {entry.run.title}")
            for entry in checkpoint_registry(with_heads=False)]


# -- the ablation ---------------------------------------------------------------------------------------

_ABLATIONS: OrderedDict[tuple, dict | None] = OrderedDict()


def _ablation_key(folder: Path) -> tuple:
    """What the table depends on: steps.json, the config and every evaluation file (size and mtime)."""
    key = []
    for path in [folder / "steps.json", folder / "ablation_config.json", *sorted(folder.glob("eval/*/*"))]:
        try:
            stat = path.stat()
            key.append((str(path), stat.st_size, stat.st_mtime_ns))
        except OSError:
            key.append((str(path),))
    return tuple(key)


def ablation_data(run: TrainingRun) -> dict[str, Any] | None:
    """The ablation's table, steps and Markdown, rebuilt from the run folder by ``training.ablation``'s
    own table code (``read_ablation``), once per change of the files it reads."""
    from training.ablation import read_ablation

    folder = run.path / TrainingRun.ABLATION
    key = (str(folder), _ablation_key(folder))
    with _CACHE_LOCK:
        if key in _ABLATIONS:
            return _ABLATIONS[key]
    data = read_ablation(folder)
    with _CACHE_LOCK:
        _remember(_ABLATIONS, key, data)
    return data


def ablation_progress(run: TrainingRun) -> tuple[int, int]:
    """(steps done, steps planned) of an ablation run, from its folder (no table built)."""
    from training.ablation import Ablation, AblationConfig
    from training.base_config import ConfigError, load_config

    config_file = run.path / run.steps[0]["config_file"] if run.steps else None
    try:
        config = load_config(AblationConfig, config_file)
    except (ConfigError, TypeError):
        return 0, 0
    states = Ablation(config).step_states()
    return sum(1 for s in states if s["done"]), len(states)


def ablation_dashboard(run: TrainingRun) -> dict[str, Any] | None:
    """The ablation dashboard: the Table-4 table with intervals, the T2 step-level table, how requests
    ended and the wall time per step, as rows in the order ``training.ablation`` writes them, and the
    data of its charts (scores per set and model; seconds per step)."""
    from training.ablation import (
        LABELS,
        MODELS,
        OUTCOME_SETS,
        OUTCOMES,
        SET_LABELS,
        STEP_DIMENSIONS,
    )

    data = ablation_data(run)
    if data is None:
        return None
    table = data["table"]
    scores = [{"model": m, "label": LABELS[m], "cells": [table["models"].get(m, {}).get(s) for s in SET_LABELS]}
              for m in MODELS]
    steps = [{"model": m, "label": LABELS[m],
              "cells": [table.get("t2_steps", {}).get(m, {}).get(d) for d in STEP_DIMENSIONS]} for m in MODELS]
    outcomes = []
    for m in MODELS:
        cells = []
        for set_name in OUTCOME_SETS:
            counts = table.get("outcomes", {}).get(m, {}).get(set_name)
            if counts is not None:
                counts = {**counts, "other": counts["n"] - sum(counts[name] for name in OUTCOMES)}
            cells.append(counts)
        outcomes.append({"model": m, "label": LABELS[m], "cells": cells})
    chart = {"sets": list(SET_LABELS.values()),
             "models": [{"label": row["label"], "scores": [c["score"] if c else None for c in row["cells"]]}
                        for row in scores],
             "steps": [{"name": s["name"], "wall_s": round(s["wall_s"], 1) if s["wall_s"] is not None else None}
                       for s in data["steps"]]}
    return {"config": data["config"], "set_labels": list(SET_LABELS.values()),
            "dimension_labels": list(STEP_DIMENSIONS.values()),
            "outcome_labels": [SET_LABELS[s].removesuffix(" AVG") for s in OUTCOME_SETS], "scores": scores,
            "t2_steps": steps, "outcomes": outcomes, "targets": table["targets"], "steps": data["steps"],
            "done": sum(1 for s in data["steps"] if s["done"]), "markdown": data["markdown"], "chart": chart}


# -- comparing two checkpoints ----------------------------------------------------------------------------

COMPARE_RESAMPLES = 10_000  # as the ablation (training.ablation.AblationConfig.resamples)


@dataclass
class SetComparison:
    """One evaluation set scored on both checkpoints: both scores, and B - A with its interval."""

    name: str
    label: str
    a_run: TrainingRun | None           # the evaluation run the scores come from
    b_run: TrainingRun | None
    a_score: float | None = None
    b_score: float | None = None
    a_n: int = 0
    b_n: int = 0
    difference: dict[str, float] | None = None
    problem: str = ""                    # why there is no interval


def _evaluations_of(run: TrainingRun) -> list[TrainingRun]:
    from studio.jobs.models import Job

    return list(TrainingRun.objects.filter(kind=TrainingRun.EVAL, parent=run, job__status=Job.SUCCEEDED)
                .select_related("job").order_by("-created_at", "-id"))


def _newest_scores(evaluations: list[TrainingRun], set_name: str):
    from training.ablation import item_scores

    for evaluation in evaluations:
        scores = item_scores(evaluation.path / "eval", set_name)
        if scores:
            return evaluation, scores
    return None, None


def checkpoint_compare(*, a: TrainingRun, b: TrainingRun, resamples: int = COMPARE_RESAMPLES) -> list[SetComparison]:
    """Per evaluation set, the two checkpoints' scores from their newest finished evaluation runs that
    scored it (their per-item JSONL in RUN/eval/), and B - A paired item by item with the paired
    bootstrap 95% interval, by the ablation's own code (``training.ablation.item_scores`` and
    ``paired_difference``). Sets scored on different items get a message instead of an interval."""
    from studio.training.configs import EVAL_SET_LABELS
    from training.ablation import paired_difference

    a_evals, b_evals = _evaluations_of(a), _evaluations_of(b)
    out = []
    for name, label in EVAL_SET_LABELS.items():
        a_run, a_scores = _newest_scores(a_evals, name)
        b_run, b_scores = _newest_scores(b_evals, name)
        row = SetComparison(name=name, label=label, a_run=a_run, b_run=b_run)
        for side, scores in (("a", a_scores), ("b", b_scores)):
            if scores:
                setattr(row, f"{side}_score", 100 * sum(scores.values()) / len(scores))
                setattr(row, f"{side}_n", len(scores))
        missing = [f"run #{run.pk}" for run, scores in ((a, a_scores), (b, b_scores)) if not scores]
        if missing:
            row.problem = f"not scored on {label} yet for {' and '.join(missing)}: evaluate it with this set"
        elif set(a_scores) != set(b_scores):
            shared = len(set(a_scores) & set(b_scores))
            row.problem = (f"not scored on the same items: run #{a.pk}'s evaluation #{a_run.pk} has {len(a_scores)}, "
                           f"run #{b.pk}'s evaluation #{b_run.pk} has {len(b_scores)}, {shared} in common; a paired "
                           "interval needs the same items: evaluate both with the same number of cases")
        else:
            row.difference = paired_difference(a_scores, b_scores, resamples=resamples)
        out.append(row)
    return out
