"""Job kinds of the playground: one agent run."""

from __future__ import annotations

from studio.jobs.registry import JobContext, job_kind


@job_kind("playground_run", label="Playground run")
def playground_run_job(context: JobContext) -> dict:
    from studio.playground.services import playground_run

    return playground_run(
        version_id=context.params["version_id"],
        endpoint_id=context.params["endpoint_id"],
        request=context.params["request"],
        progress=context.progress,
    )
