"""Job kinds of the endpoints app: the connection test."""

from __future__ import annotations

from studio.endpoints.models import ModelEndpoint
from studio.endpoints.services import endpoint_check, endpoint_record_check
from studio.jobs.registry import JobContext, JobFailed, job_kind


@job_kind(
    "endpoint_test",
    label="Endpoint connection test",
    result_template="endpoints/_test_result.html",
    outcome=lambda result: (result or {}).get("message", ""),
)
def endpoint_test(context: JobContext) -> dict:
    endpoint = ModelEndpoint.objects.filter(pk=context.params["endpoint_id"]).first()
    if endpoint is None:
        raise JobFailed(f"endpoint #{context.params['endpoint_id']} no longer exists")
    context.progress(10, f"checking {endpoint.name} ({endpoint.get_route_display()})")
    check = endpoint_check(endpoint=endpoint)
    endpoint_record_check(endpoint=endpoint, check=check)
    if not check.ok:
        raise JobFailed(check.message)
    context.log(check.message)
    return {"ok": True, "message": check.message}
