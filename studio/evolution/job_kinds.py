"""Job kinds of the evolution app: an evaluation run and a diagnosis."""

from __future__ import annotations

from typing import Any

from studio.jobs.registry import JobContext, job_kind


def eval_run_title(job) -> str:
    """'Evaluate <version> on <dataset> (<scored>/<total> scored)', counted now (the stored title
    goes stale)."""
    from studio.evolution.models import EvalRun

    run = (
        EvalRun.objects.select_related("version__harness", "dataset")
        .filter(pk=job.params.get("run_id"))
        .first()
    )
    if run is None:
        return job.title
    return (
        f"Evaluate {run.version} on {run.dataset.name} ({run.results.count()}/{run.total} scored)"
    )


def eval_run_outcome(result: dict[str, Any]) -> str:
    """How the run's requests ended, with the warning when most of them fell back."""
    from evaluation.summary import outcome_line
    from studio.jobs.fallback import fallback_first, summary_flag

    if not result.get("outcomes"):
        return ""
    return fallback_first(outcome_line(result), flag=summary_flag({"": result}))


def present_eval_run_result(result: dict[str, Any]) -> dict[str, Any]:
    from studio.evolution.selectors import outcome_warning

    return {"result": result, "warning": outcome_warning(summary=result)}


@job_kind(
    "evolution_eval_run",
    label="Evaluation run",
    title=eval_run_title,
    outcome=eval_run_outcome,
    result_template="evolution/_run_job_result.html",
    present=present_eval_run_result,
)
def eval_run_job(context: JobContext) -> dict:
    from studio.evolution.services.runs import eval_run_execute
    from studio.jobs.models import Job

    worker = Job.objects.filter(pk=context.job_id).values_list("worker", flat=True).first() or ""
    return eval_run_execute(
        run_id=context.params["run_id"],
        progress=context.progress,
        log=context.log,
        in_worker=getattr(context, "in_worker", False),
        worker=worker,
    )


@job_kind("evolution_diagnose", label="Diagnosis")
def diagnose_job(context: JobContext) -> dict:
    from studio.evolution.services.diagnosis import diagnosis_execute

    return diagnosis_execute(diagnosis_id=context.params["diagnosis_id"], log=context.log)
