"""Reading the audit log."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.audit.models import AuditEvent


def audit_event_list(*, harness=None, limit: int = 200) -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.select_related("actor", "harness")
    if harness is not None:
        events = events.filter(harness=harness)
    return events[:limit]
