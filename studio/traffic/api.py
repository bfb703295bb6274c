"""The traffic API: a deployment posts its agent's trajectory records.

``POST /api/v1/deployments/<name>/trajectories/`` with ``Authorization: Bearer hsd_...`` (a token of
that deployment) and a JSON body: one trajectory record (``Trajectory.to_dict()``, optionally with
``"model": {"name", "fingerprint"}``) or a list of up to 100. The answers: 401 without a valid
token, 403 for another deployment's name (whether or not it exists), 413 for a body over
``TRAFFIC_MAX_BODY_BYTES`` (read from the Content-Length header before any of the body is read), 400
naming each bad field, 429 past the deployment's ``TRAFFIC_MAX_RECORDS_PER_HOUR``, 201 with the ids
stored and those already stored (a retried post stores nothing twice; 200 when every id was known).
"""

from __future__ import annotations

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from studio.api.auth import api_error
from studio.traffic.services import (
    TrafficError,
    TrafficLimitReached,
    deployment_token_authenticate,
    traffic_ingest,
)


def _declared_length(request) -> int | None:
    raw = request.META.get("CONTENT_LENGTH") or ""
    return int(raw) if raw.isdigit() else None


def _read_bounded(request, limit: int) -> bytes | None:
    """The body, or None when it is longer than ``limit`` (a body without Content-Length is read
    only to ``limit`` + 1 bytes)."""
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        return None
    data = request.read(limit + 1)
    return None if len(data) > limit else data


@csrf_exempt
def trajectories_post(request, name: str):
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    row = deployment_token_authenticate(token=token.strip()) if scheme.lower() == "bearer" else None
    if row is None:
        return api_error(
            401,
            "send a deployment's token: 'Authorization: Bearer hsd_...' (make one on the "
            "deployment's page under /traffic/deployments/)",
        )
    if request.method != "POST":
        return api_error(405, "use POST")
    if row.deployment.name != name:
        # the same answer whether or not ``name`` exists: a token does not tell which other
        # deployments there are
        return api_error(
            403,
            f"this token belongs to deployment {row.deployment.name!r}; it posts only to "
            f"/api/v1/deployments/{row.deployment.name}/trajectories/",
        )
    limit = settings.TRAFFIC_MAX_BODY_BYTES
    body = _read_bounded(request, limit)
    if body is None:
        return api_error(
            413,
            f"body: larger than {limit:,} bytes (TRAFFIC_MAX_BODY_BYTES); post fewer "
            "trajectories at a time",
        )
    from harness.userfiles import InputFileError, parse_json

    try:
        payload = parse_json(body.decode("utf-8"), source="body", what="trajectory record")
    except UnicodeDecodeError as error:
        return api_error(400, f"body: not UTF-8 text ({error.reason} at byte {error.start})")
    except (InputFileError, ValueError) as error:
        return api_error(400, str(error))
    try:
        result = traffic_ingest(deployment=row.deployment, records=payload)
    except TrafficLimitReached as error:
        response = api_error(429, str(error))
        response["Retry-After"] = str(error.retry_after_s)
        return response
    except TrafficError as error:
        return api_error(400, str(error), problems=error.problems)
    return JsonResponse({"deployment": name, **result}, status=201 if result["stored"] else 200)
