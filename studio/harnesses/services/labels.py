"""Labels: movable names (production, staging, ...) pointing at a version, with their history."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from studio.accounts.roles import user_can
from studio.audit.services import audit_record
from studio.harnesses.models import Harness, HarnessVersion, Label, LabelMove
from studio.harnesses.services.errors import StudioError

LABEL_PATTERN = r"[a-z0-9_-]{1,40}"
"""A label name: an ASCII slug, as the URLs that name a label (``<slug:label>``) accept."""


def label_check_permission(*, actor: User, name: str) -> None:
    if name == Label.PRODUCTION:
        if not user_can(actor, "label.production"):
            raise PermissionDenied("moving the production label needs the reviewer role")
    elif not user_can(actor, "label.move"):
        raise PermissionDenied("moving labels needs the operator or reviewer role")


@transaction.atomic
def label_move(
    *,
    harness: Harness,
    name: str,
    version: HarnessVersion,
    actor: User,
    reason: str,
    kind: str = "set",
) -> Label:
    """Point label `name` at `version` and record the move; production needs a reviewer and a
    reason."""
    name = name.strip().lower()
    if not re.fullmatch(LABEL_PATTERN, name):
        raise StudioError(
            f"label: use 1-40 of a-z, 0-9, '-' or '_' (e.g. staging, canary-eu), not {name!r}"
        )
    if version.harness_id != harness.pk:
        raise StudioError(f"version: {version} does not belong to {harness.name}")
    label_check_permission(actor=actor, name=name)
    reason = reason.strip()
    if name == Label.PRODUCTION and not reason:
        raise StudioError("reason: say why this version goes to production")
    label = Label.objects.select_for_update().filter(harness=harness, name=name).first()
    previous = label.version if label else None
    if previous is not None and previous.pk == version.pk:
        raise StudioError(f"label: {name} already points at v{version.number}")
    if label is None:
        try:
            with transaction.atomic():
                label = Label.objects.create(
                    harness=harness, name=name, version=version, updated_by=actor
                )
        except IntegrityError:
            raise StudioError(
                f"label: {name} was just created by someone else; reload and try again"
            ) from None
    else:
        label.version = version
        label.updated_by = actor
        label.save(update_fields=["version", "updated_by", "updated_at"])
    if kind == "set" and name == Label.PRODUCTION:
        kind = "promote"
    LabelMove.objects.create(
        label=label,
        from_version=previous,
        to_version=version,
        kind=kind,
        reason=reason,
        moved_by=actor,
    )
    audit_record(
        actor=actor,
        action=f"label.{kind}",
        harness=harness,
        target=f"{harness.name}@{name}",
        data={
            "from": previous.number if previous else None,
            "to": version.number,
            "reason": reason,
        },
    )
    return label


def label_rollback(*, label: Label, actor: User, reason: str) -> Label:
    """Move the label back to the version it pointed at before its latest move."""
    last = label.moves.exclude(from_version__isnull=True).first()
    if last is None:
        raise StudioError(f"label: {label.name} has no earlier version to roll back to")
    return label_move(
        harness=label.harness,
        name=label.name,
        version=last.from_version,
        actor=actor,
        reason=reason or f"rollback from v{label.version.number}",
        kind="rollback",
    )
