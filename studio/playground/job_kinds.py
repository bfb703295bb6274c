"""Job kinds of the playground: one agent run, shown as a step-by-step trajectory while it runs."""

from __future__ import annotations

from studio.jobs.registry import JobContext, job_kind
from studio.presenters import present_playground_result


@job_kind(
    "playground_run",
    label="Playground run",
    result_template="playground/_trajectory.html",
    present=present_playground_result,
)
def playground_run_job(context: JobContext) -> dict:
    from studio.playground.services import playground_run, playground_steps_store

    return playground_run(
        version_id=context.params["version_id"],
        endpoint_id=context.params["endpoint_id"],
        request=context.params["request"],
        dataset_id=context.params.get("dataset_id"),
        files=context.params.get("files"),
        draft_label=context.params.get("draft_label", ""),
        budget_s=context.params.get("budget_s"),
        progress=context.progress,
        steps=lambda result: playground_steps_store(job_id=context.job_id, result=result),
    )
