"""Per-request and per-user limits, answered before or around the view: one middleware.

- A request body over ``MAX_REQUEST_BYTES`` is refused by its ``Content-Length`` with a 413 before
  any of it is read, so an oversized upload is never written to a temporary file (a 300 MiB
  multipart upload sent as a reviewer was once written to /tmp in full before its 400). Django's
  WSGI request reads at most ``Content-Length`` bytes, so a body cannot outgrow the header.
- ``JobQuotaExceeded`` (``studio.jobs.services.job_create``: a person's jobs queued or running at
  once, ``JOB_QUOTA_PER_USER``) raised by any view becomes a 429 naming the limit and the jobs that
  hold it, as JSON under ``/api/`` and as a page elsewhere.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string

from studio.jobs.services import JobQuotaExceeded


def _refusal(request, status: int, title: str, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"error": message}, status=status)
    page = render_to_string("limit.html", {"title": title, "message": message})
    return HttpResponse(page, status=status)


class RequestLimitsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > settings.MAX_REQUEST_BYTES:
            return _refusal(
                request,
                413,
                "Request too large",
                f"the request body is {length} bytes; the studio accepts at most "
                f"{settings.MAX_REQUEST_BYTES} bytes (MAX_REQUEST_BYTES; an import is at most "
                f"MAX_IMPORT_BYTES = {settings.MAX_IMPORT_BYTES}); nothing was read or saved",
            )
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, JobQuotaExceeded):
            return _refusal(request, 429, "Too many jobs", str(exception))
        return None
