"""Job kinds of the evolution app: an evaluation run and a diagnosis."""

from __future__ import annotations

from studio.jobs.registry import JobContext, job_kind


@job_kind("evolution_eval_run", label="Evaluation run")
def eval_run_job(context: JobContext) -> dict:
    from studio.evolution.runs import eval_run_execute

    return eval_run_execute(run_id=context.params["run_id"], progress=context.progress, log=context.log)


@job_kind("evolution_diagnose", label="Diagnosis")
def diagnose_job(context: JobContext) -> dict:
    from studio.evolution.diagnosis import diagnosis_execute

    return diagnosis_execute(diagnosis_id=context.params["diagnosis_id"], log=context.log)
