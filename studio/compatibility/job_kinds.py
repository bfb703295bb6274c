"""Job kinds of the compatibility app: asking for the cells a label move needs, or a new
checkpoint's, on a worker."""

from __future__ import annotations

from studio.jobs.registry import JobContext, job_kind


def fill_outcome(result: dict) -> str:
    return f"{result.get('cells', 0)} cell(s), {result.get('new_runs', 0)} new evaluation run(s)"


@job_kind("compatibility_fill", label="Compatibility cells", outcome=fill_outcome)
def compatibility_fill_job(context: JobContext) -> dict:
    """The cells a label move needs (``services.cells_for_label``), follow-ons on behalf of whoever
    moved the label (this job's starter); a cell that exists is reused."""
    from studio.compatibility.services import cells_for_label
    from studio.evolution.models import EvalRun
    from studio.jobs.models import Job

    before = EvalRun.objects.count()
    job = Job.objects.select_related("created_by").get(pk=context.job_id)
    cells = cells_for_label(
        harness_id=context.params["harness_id"],
        label=context.params["label"],
        on_behalf_of=job.created_by,
        log=context.log,
    )
    return _cells_result(context=context, cells=cells, runs_before=before)


@job_kind(
    "compatibility_checkpoint", label="Compatibility cells of a checkpoint", outcome=fill_outcome
)
def compatibility_checkpoint_job(context: JobContext) -> dict:
    """A training run's checkpoint entered the registry: its cells
    (``services.cells_for_checkpoint``). A step of its own after the training job, so that a failure
    here never marks the finished training failed; a locked database ends no try (a cell that exists
    is reused, so the step runs again whole)."""
    from studio.compatibility.services import cells_for_checkpoint
    from studio.dblocks import run_again_when_locked
    from studio.evolution.models import EvalRun

    run_id = int(context.params["run_id"])
    before = EvalRun.objects.count()
    cells = run_again_when_locked(
        lambda: cells_for_checkpoint(run_id=run_id, log=context.log),
        what=f"the cells of run #{run_id}",
        log=context.log,
    )
    return _cells_result(context=context, cells=cells, runs_before=before)


def _cells_result(*, context: JobContext, cells: list, runs_before: int) -> dict:
    """Each cell in the job's log, and the job's result: how many cells, how many evaluation runs
    are new since ``runs_before`` (the count when the job started), and the cells' runs."""
    from studio.evolution.models import EvalRun

    for cell in cells:
        context.log(
            f"{cell.endpoint.name} on v{cell.version.number}: evaluation run #{cell.run_id} "
            f"({cell.run.status}; {cell.reason})"
        )
    return {
        "cells": len(cells),
        "new_runs": EvalRun.objects.count() - runs_before,
        "runs": [cell.run_id for cell in cells],
    }
