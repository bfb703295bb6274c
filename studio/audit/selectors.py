"""Reading the audit log."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.audit.models import AuditEvent


def audit_event_list(*, harness=None, limit: int = 200) -> QuerySet[AuditEvent]:
    events = AuditEvent.objects.select_related("actor", "harness")
    if harness is not None:
        events = events.filter(harness=harness)
    return events[:limit]


def gate_overrides(*, version) -> list[AuditEvent]:
    """The audit events of promotions of ``version`` that went through with a gate overridden."""
    return list(
        AuditEvent.objects.select_related("actor")
        .filter(
            action="evolution.gates.override",
            harness_id=version.harness_id,
            data__version=version.number,
        )
        .order_by("-created_at")
    )
