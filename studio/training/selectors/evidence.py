"""The training app's evidence for the release gates (``studio.gates``): its finished
replay and evaluation runs, what each served, and their records read by the one reader of each
(``serving.record.read_replay_timing``, ``evaluation.gates.read_ifeval``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.db.models import F, QuerySet

from evaluation.gates import IFEvalScores, ReplayTiming, read_ifeval
from studio.jobs.models import Job
from studio.training.models import TrainingRun

RECENT_RUNS = 200  # finished runs looked through, newest first, for the one that feeds a gate


def finished_runs(*, kind: str) -> QuerySet[TrainingRun]:
    """The newest ``RECENT_RUNS`` runs of ``kind`` that finished with a result, newest first."""
    return (
        TrainingRun.objects.select_related("job", "harness_version__harness")
        .filter(kind=kind, job__status=Job.SUCCEEDED, summary__isnull=False)
        .order_by(F("job__finished_at").desc(nulls_last=True), "-pk")[:RECENT_RUNS]
    )


def resolved(*, path: str | Path | None) -> Path | None:
    """An absolute model folder resolved, None for anything else (a hub id, an empty field)."""
    if not path or not str(path).startswith("/"):
        return None
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return None


def replay_checkpoint(*, run: TrainingRun) -> dict[str, Any]:
    """What a replay run served, as its record says ({path, fingerprint}), else as its route names
    it."""
    route = (run.summary or {}).get("route")
    recorded = route.get("checkpoint") if isinstance(route, dict) else None
    if isinstance(recorded, dict) and recorded.get("path"):
        return {"path": recorded["path"], "fingerprint": recorded.get("fingerprint")}
    engine, _, rest = run.model.partition(":")
    if rest and engine in ("local", "transformers"):
        return {"path": rest, "fingerprint": None}
    from serving.profiles import ProfileError, resolve_route

    try:
        return {"path": resolve_route(run.model).checkpoint, "fingerprint": None}
    except ProfileError:
        return {"path": None, "fingerprint": None}


def replay_timing(*, run: TrainingRun) -> ReplayTiming:
    """The replay run's timing (``evaluation.gates.EvidenceError`` on a record of a shape not
    known)."""
    from serving.record import read_replay_timing

    return read_replay_timing(
        (run.summary or {}).get("replay") or {}, source=f"replay run #{run.pk}"
    )


def run_under_version(*, run: TrainingRun, version) -> bool:
    """The run served the Harness ``version``: its own field, else the digest its replay
    recorded."""
    if run.harness_version_id is not None:
        return run.harness_version_id == version.pk
    replay = (run.summary or {}).get("replay") or {}
    return bool(replay.get("harness_digest")) and replay["harness_digest"] == version.digest


def ifeval_scores(*, run: TrainingRun) -> tuple[str, IFEvalScores | None]:
    """(the model evaluated, its instruction-following scores): None where the run did not score
    that set or the set failed; ``evaluation.gates.EvidenceError`` where its block has a shape not
    known."""
    scores, model = (run.summary or {}).get("evaluation"), evaluated_model(run=run)
    if not isinstance(scores, dict) or "ifeval" not in scores:
        return model, None
    return model, read_ifeval(scores["ifeval"], source=f"evaluation run #{run.pk} (ifeval)")


def evaluated_model(*, run: TrainingRun) -> str:
    """The model an evaluation run scored, as its summary names it, else as the run does."""
    scores = (run.summary or {}).get("evaluation")
    named = scores.get("model") if isinstance(scores, dict) else None
    return named if isinstance(named, str) and named else run.model
