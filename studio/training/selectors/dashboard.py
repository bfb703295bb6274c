"""A training run's dashboard: its curves downsampled on the server (``studio.training.series``),
kept as JSON text per change of its metrics files (in the studio's cache, ``studio.filecache``), and
the marks on them (held-out evaluations, kept and best checkpoints, the final model,
self-evaluations, an MTP head's acceptance).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from studio.filecache import FileCache, file_stats
from studio.training.models import TrainingRun
from studio.training.selectors.metrics import (
    Metrics,
    run_metrics,
    run_progress,
    stage_folders,
    stage_metrics,
)
from studio.training.series import DEFAULT_POINTS, curves_from_columns

_CURVES = FileCache(
    "dashboard-curves"
)  # (run, _stat_key) -> (the curves, the eval_loss rows) as JSON text


def _stat_key(run: TrainingRun, max_points: int) -> str:
    """What the curves depend on, as JSON text: the points asked for and each metrics file's
    stats."""
    return json.dumps(
        [
            max_points,
            file_stats(*(folder.path / "metrics.jsonl" for folder in stage_folders(run=run))),
        ]
    )


def run_dashboard_json(
    *, run: TrainingRun, max_points: int = DEFAULT_POINTS, ended: bool = False
) -> str:
    """What the dashboard draws, as the JSON the browser gets: downsampled curves, stage boundaries,
    progress, the marks on the curves and whether the run is still going.

    The curves are computed once per change of the run's metrics files and kept as JSON text in the
    studio's cache (``studio.filecache``: on Redis every web process shares them, so a finished
    run's first view in another process reads 150 KB instead of parsing 10,000 rows; its job
    computes them as it ends). Kept as text, not as lists of points: a web process holding many
    runs' curves as Python objects pays for them in every full garbage collection (a 200-300 ms
    stall of a random request). ``ended``: the caller knows the run has ended (its job, about to
    finish)."""
    key = _stat_key(run, max_points)
    active = bool(run.job and run.job.is_active) and not ended
    memo = (run.pk, key)
    kept = _CURVES.get(memo)
    if kept is None:
        metrics, boundaries = run_metrics(run=run)
        text = json.dumps(
            {
                "charts": curves_from_columns(
                    metrics.steps, metrics.columns, max_points=max_points, stages=boundaries
                ),
                "boundaries": boundaries,
                "progress": run_progress(run=run).as_dict(),
                "rows": len(metrics),
            }
        )
        kept = _CURVES.put(memo, (text, json.dumps(stage_eval_losses(run=run))))
    text, evaluations = kept
    marks = run_marks(
        run=run, eval_losses={name: dict(rows) for name, rows in json.loads(evaluations).items()}
    )
    extra = json.dumps({"run": run.pk, "marks": marks, "active": active})
    return text[:-1] + ", " + extra[1:]  # both are JSON objects: one object with the keys of both


def run_dashboard(
    *, run: TrainingRun, max_points: int = DEFAULT_POINTS, ended: bool = False
) -> dict[str, Any]:
    """``run_dashboard_json`` as a dict."""
    return json.loads(run_dashboard_json(run=run, max_points=max_points, ended=ended))


def stage_eval_losses(*, run: TrainingRun) -> dict[str, list[tuple[int, float]]]:
    """Each stage folder's held-out evaluations: {stage: [(step, eval_loss), ...]} (stages with none
    left out)."""
    out = {}
    for folder in stage_folders(run=run):
        if losses := _eval_losses(stage_metrics(path=folder.path / "metrics.jsonl")):
            out[folder.name] = list(losses.items())
    return out


def run_marks(
    *, run: TrainingRun, eval_losses: dict[str, dict[int, float]] | None = None
) -> list[dict[str, Any]]:
    """What the curves mark, at the step across the run's stages: each held-out evaluation (an
    ``eval_loss`` row in metrics.jsonl, SFT with ``eval_fraction``), the checkpoints the trainer
    keeps (``checkpoint-N/``, with the eval_loss of their step when there is one), the best
    checkpoint of each stage (the kept checkpoint-N whose step has the lowest eval_loss; only
    checkpoints still on disk and evaluated at their step count, so a stage without evaluations has
    none), the final model (its model card's steps) with the stage's self-evaluation (``eval.json``,
    scored once after training), and an MTP head's held-out acceptance, measured before training
    (step 0) and after it (its card.json). ``eval_losses``: ``stage_eval_losses`` as {stage: {step:
    eval_loss}}, kept with the curves (read from the metrics files when not given)."""
    from training.runs import checkpoint_step

    if eval_losses is None:
        eval_losses = {name: dict(rows) for name, rows in stage_eval_losses(run=run).items()}
    marks: list[dict[str, Any]] = []
    offset = 0
    for folder in stage_folders(run=run):
        losses = eval_losses.get(folder.name, {})
        stage_marks = [
            {
                "x": offset + step,
                "kind": "evaluation",
                "label": f"eval_loss {loss:.4f}",
                "stage": folder.name,
            }
            for step, loss in losses.items()
        ]
        kept: list[tuple[float, int, str]] = []
        for checkpoint in sorted(folder.path.glob("checkpoint-*"), key=checkpoint_step):
            if (checkpoint / "trainer_state.json").is_file():
                step = checkpoint_step(checkpoint)
                label = checkpoint.name
                if step in losses:
                    label += f" (eval_loss {losses[step]:.4f})"
                    kept.append((losses[step], step, checkpoint.name))
                stage_marks.append(
                    {"x": offset + step, "kind": "checkpoint", "label": label, "stage": folder.name}
                )
        if kept:
            loss, step, name = min(kept)  # the lowest eval_loss; of equal ones the earliest
            stage_marks.append(
                {
                    "x": offset + step,
                    "kind": "best",
                    "stage": folder.name,
                    "checkpoint": name,
                    "label": f"best checkpoint: {name} (eval_loss {loss:.4f})",
                }
            )
        marks += sorted(stage_marks, key=lambda m: m["x"])
        card_path = folder.path / "model_card.json"
        if card_path.is_file():
            try:
                card = json.loads(card_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                card = {}
            step = card.get("steps") if isinstance(card.get("steps"), int) else folder.total_steps
            marks.append(
                {"x": offset + step, "kind": "final", "label": "final", "stage": folder.name}
            )
            marks += _evaluation_marks(folder.path, x0=offset, x=offset + step, stage=folder.name)
        offset += folder.total_steps
    return marks


def _eval_losses(metrics: Metrics) -> dict[int, float]:
    """{step: eval_loss} of a stage's finite eval_loss rows, in step order (a step logged twice: its
    last)."""
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
        parts = [
            f"{name} AVG {s['avg']:.1f}"
            if "avg" in s
            else f"{name} strict {s.get('prompt_strict', 0):.1f}"
            for name, s in scores.items()
            if isinstance(s, dict) and ("avg" in s or "prompt_strict" in s)
        ]
        marks.append(
            {
                "x": x,
                "kind": "eval",
                "label": "self-evaluation: " + ", ".join(parts),
                "stage": stage,
            }
        )
    head_card = path / "final" / "card.json"
    if head_card.is_file():
        try:
            card = json.loads(head_card.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            card = {}
        for key, at in (("acceptance_held_out_before", x0), ("acceptance_held_out", x)):
            acceptance = card.get(key) or {}
            if isinstance(acceptance.get("acceptance_rate"), int | float):
                marks.append(
                    {
                        "x": at,
                        "kind": "eval",
                        "stage": stage,
                        "label": f"held-out acceptance {acceptance['acceptance_rate']:.3f}"
                        f" (length {acceptance.get('acceptance_length', 0):.2f})",
                    }
                )
    return marks
