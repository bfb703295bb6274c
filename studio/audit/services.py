"""Writing audit events (called by every service that changes something)."""

from __future__ import annotations

from typing import Any

from studio.audit.models import AuditEvent


def audit_record(
    *, actor, action: str, target: str, data: dict[str, Any], harness=None
) -> AuditEvent:
    """Append one audit event. `actor` may be None for the system (e.g. the job reaper)."""
    return AuditEvent.objects.create(
        actor=actor if actor is not None and actor.is_authenticated else None,
        action=action,
        harness=harness,
        target=target[:255],
        data=data,
    )
