"""Job kinds of the annotation app: measuring a judge against a labelled set."""

from __future__ import annotations

from studio.jobs.registry import JobContext, JobFailed, job_kind


def calibration_outcome(result: dict) -> str:
    return (
        f"Accuracy agreement {100 * result.get('accuracy_agreement', 0):.1f}%, Effectiveness "
        f"{100 * result.get('effectiveness_agreement', 0):.1f}% on {result.get('n', 0)} replies"
    )


@job_kind("judge_calibration", label="Judge calibration", outcome=calibration_outcome)
def judge_calibration_job(context: JobContext) -> dict:
    from studio.annotation.calibration import calibration_run
    from studio.jobs.models import Job

    job = Job.objects.get(pk=context.job_id)
    try:
        row = calibration_run(
            judge=context.params["judge"],
            dataset_id=context.params["dataset_id"],
            actor_id=job.created_by_id,
        )
    except ValueError as error:  # no labelled reply, a judge spec that no longer builds
        raise JobFailed(str(error)) from None
    context.log(f"calibration #{row.pk}: {row.judge} on {row.dataset.name}, {row.n} replies")
    return {
        "calibration_id": row.pk,
        "n": row.n,
        "accuracy_agreement": row.accuracy_agreement,
        "effectiveness_agreement": row.effectiveness_agreement,
    }
