"""The audit log page."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from studio.accounts.decorators import requires
from studio.audit.selectors import audit_event_list


@require_GET
@requires("audit.view")
def audit_log(request):
    return render(request, "audit/audit_log.html", {"events": audit_event_list(limit=500)})
