"""Training runs: the lookups, and the result a finished run left in its folder."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet

from studio.training.models import TrainingRun


def run_list(*, kind: str | None = None, limit: int = 200) -> QuerySet[TrainingRun]:
    runs = TrainingRun.objects.select_related(
        "job", "created_by", "parent", "harness_version__harness"
    )
    if kind:
        runs = runs.filter(kind=kind)
    return runs[:limit]


def run_get(*, run_id: int) -> TrainingRun:
    return TrainingRun.objects.select_related(
        "job", "created_by", "parent", "harness_version__harness"
    ).get(pk=run_id)


def read_folder_summary(*, run: TrainingRun) -> dict[str, Any] | None:
    """The run's result as its folder holds it: model card (+ eval.json), evaluation or replay
    summary."""
    if run.is_training:
        final = run.final_dir
        card_path = final.parent / "model_card.json" if final else None
        if card_path is None or not card_path.is_file():
            return None
        from training.runs import read_model_card

        summary = {"model_card": read_model_card(final.parent)}
        if run.kind == TrainingRun.MTP:
            from harness.draft_head_files import DraftHeadError, read_card

            # the head's own card: the policy it drafts for (path, fingerprint) and its held-out
            # acceptance
            try:
                summary["head_card"] = read_card(final)
            except DraftHeadError as error:
                summary["head_card_error"] = str(error)
        eval_path = final.parent / "eval.json"
        if eval_path.is_file():
            summary["self_eval"] = json.loads(eval_path.read_text(encoding="utf-8"))
        return summary
    if run.kind == TrainingRun.ABLATION:
        from studio.training.selectors.comparison import ablation_data

        data = ablation_data(run=run)
        return {"ablation": {"table": data["table"], "steps": data["steps"]}} if data else None
    if run.kind == TrainingRun.EVAL:
        path = run.path / "eval" / "summary.json"
        return (
            {"evaluation": json.loads(path.read_text(encoding="utf-8"))} if path.is_file() else None
        )
    from serving.record import RunRecordError, load_run

    try:
        meta, summary = load_run(run.replay_dir)
    except RunRecordError:
        return None
    table = run.replay_dir / "table.md"
    return {
        "replay": summary,
        "route": meta.get("route"),
        "table": table.read_text(encoding="utf-8") if table.is_file() else "",
    }
