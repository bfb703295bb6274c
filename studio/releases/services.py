"""Writes for releases: check a proposed release, draft it, refresh its gates, approve or reject it.

``release_check`` reads every field and collects every problem before anything is written (the
checkpoint must be in the registry, the draft head must be adapted to that checkpoint, the Harness
version must exist); ``release_draft`` then stores the release with its gates, all or nothing. The
gates are ``studio.gates``'s, the same the evolution loop promotes with; approval with a
blocking gate needs the reviewer's written override (``gates_check_promotion``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils import timezone

from evaluation.gates import Gate, gates_check_promotion
from harness.checkpoints import CheckpointError
from studio.audit.services import audit_record
from studio.gates import checkpoint_release_gates
from studio.releases.models import Release

MAX_TEXT = 2000
DECISIONS = ("approve", "reject")


class ReleaseRefused(ValueError):
    """What is wrong with a release's fields or a decision: {field: message}, every field named."""

    def __init__(self, errors: dict[str, str]):
        self.errors = errors
        super().__init__("; ".join(errors.values()))


@dataclass
class ReleasePlan:
    """A checked release, not yet saved: what it binds and the gates it has now."""

    run: Any  # studio.training.models.TrainingRun
    checkpoint: Path
    fingerprint: str
    version: Any  # studio.harnesses.models.HarnessVersion
    files: list[dict[str, Any]] = field(default_factory=list)
    draft_head: Path | None = None
    head_fingerprint: str = ""
    head_files: list[dict[str, Any]] = field(default_factory=list)
    head_card: dict[str, Any] | None = None
    gates: list[Gate] = field(default_factory=list)


def _checkpoint_entry(value: str):
    from studio.training.selectors import checkpoint_registry

    if not value.startswith("/"):
        return None
    try:
        wanted = Path(value).resolve()
    except (OSError, RuntimeError):
        return None
    return next((e for e in checkpoint_registry() if e.path.resolve() == wanted), None)


def draft_head_problem(*, head: Path, checkpoint: Path) -> str:
    """Why ``head`` cannot draft for ``checkpoint`` ('' when it can): it must be the final/ folder
    of a finished studio MTP run (like a checkpoint, never any folder of the host), and pass the
    launcher's own check (``serving.sglang.check_draft_head``: files, shapes, the policy its card
    names)."""
    from serving.sglang import check_draft_head
    from studio.training.selectors import draft_heads

    if not any(entry.path.resolve() == head for entry in draft_heads()):
        return (
            f"draft_head: {str(head)[:200]} is not the head "
            "of a finished studio MTP run; choose one of the "
            "heads offered (an MTP run's final/ folder, /training/) or leave it empty"
        )
    _algorithm, problems = check_draft_head(head, checkpoint)
    return "; ".join(problems)


def release_check(*, checkpoint: str, draft_head: str, harness_version: str) -> ReleasePlan:
    """The release these fields describe, with its gates now; ReleaseRefused naming every bad
    field."""
    from serving.release import folder_entry
    from studio.training.configs import harness_version as version_named

    errors: dict[str, str] = {}
    checkpoint, draft_head, harness_version = (
        checkpoint.strip(),
        draft_head.strip(),
        harness_version.strip(),
    )
    entry = _checkpoint_entry(checkpoint) if checkpoint else None
    if entry is None:
        errors["checkpoint"] = (
            "checkpoint: choose a checkpoint of the registry (/training/checkpoints/): the final/ "
            "folder of a studio training run"
            + (f", not {checkpoint[:200]!r}" if checkpoint else "")
        )
    version = version_named(harness_version) if harness_version else None
    if version is None:
        errors["harness_version"] = (
            "harness_version: choose a studio Harness version as NAME@vN, e.g. "
            "livestream-avatar@v1" + (f", not {harness_version[:100]!r}" if harness_version else "")
        )
    head = None
    if draft_head:
        if not draft_head.startswith("/") or len(draft_head) > 500:
            errors["draft_head"] = (
                "draft_head: give the absolute path of a "
                f"draft-head folder, not {draft_head[:200]!r}"
            )
        elif entry is not None:
            try:
                head = Path(draft_head).resolve()
            except (OSError, RuntimeError):
                head = Path(draft_head)
            problem = draft_head_problem(head=head, checkpoint=entry.path)
            if problem:
                errors["draft_head"] = problem
    if errors:
        raise ReleaseRefused(errors)
    folders = {}
    for name, folder in (("checkpoint", entry.path), ("draft_head", head)):
        if folder is None:
            continue
        try:
            folders[name] = folder_entry(folder)
        except CheckpointError as error:  # a folder the web process cannot read: named, never a 500
            errors[name] = f"{name}: cannot be read on this host ({error}); check its files"
    if errors:
        raise ReleaseRefused(errors)
    fingerprint = folders["checkpoint"]["fingerprint"]
    plan = ReleasePlan(
        run=entry.run,
        checkpoint=entry.path.resolve(),
        fingerprint=fingerprint,
        version=version,
        files=folders["checkpoint"]["files"],
    )
    if head is not None:
        from harness.draft_head_files import read_card

        plan.draft_head, plan.head_card = head, read_card(head)
        plan.head_fingerprint, plan.head_files = (
            folders["draft_head"]["fingerprint"],
            folders["draft_head"]["files"],
        )
    plan.gates = checkpoint_release_gates(
        version=version, checkpoint=plan.checkpoint, fingerprint=fingerprint
    )
    return plan


def _clean_text(
    value: str, name: str, errors: dict[str, str], *, required: bool = False, what: str = ""
) -> str:
    value = value.strip()
    if len(value) > MAX_TEXT:
        errors[name] = f"{name}: at most {MAX_TEXT} characters"
    elif required and not value:
        errors[name] = f"{name}: {what}"
    return value


def release_draft(
    *, checkpoint: str, draft_head: str, harness_version: str, notes: str, actor: User
) -> Release:
    """Check the fields, compute the gates and store the release (a draft); nothing is kept on any
    error."""
    errors: dict[str, str] = {}
    notes = _clean_text(notes, "notes", errors)
    try:
        plan = release_check(
            checkpoint=checkpoint, draft_head=draft_head, harness_version=harness_version
        )
    except ReleaseRefused as refused:
        raise ReleaseRefused({**refused.errors, **errors}) from None
    if errors:
        raise ReleaseRefused(errors)
    with transaction.atomic():
        release = Release.objects.create(
            checkpoint_run=plan.run,
            checkpoint_path=str(plan.checkpoint),
            checkpoint_fingerprint=plan.fingerprint,
            checkpoint_files=plan.files,
            draft_head_files=plan.head_files,
            draft_head_path=str(plan.draft_head or ""),
            draft_head_fingerprint=plan.head_fingerprint,
            draft_head_card=plan.head_card,
            harness_version=plan.version,
            gates=[g.to_dict() for g in plan.gates],
            gates_at=timezone.now(),
            notes=notes,
            drafted_by=actor,
        )
        audit_record(
            actor=actor,
            action="release.draft",
            harness=plan.version.harness,
            target=f"release #{release.pk}",
            data={
                "checkpoint": str(plan.checkpoint),
                "fingerprint": plan.fingerprint,
                "draft_head": str(plan.draft_head or ""),
                "version": plan.version.number,
                "gates": {g.name: g.status for g in plan.gates},
            },
        )
    return release


def _require_draft(release: Release) -> None:
    if release.status != Release.DRAFT:
        who = release.decided_by.username if release.decided_by else "someone"
        raise ReleaseRefused(
            {
                "status": f"status: release #{release.pk} was already {release.status} by {who} "
                f"on {release.decided_at:%Y-%m-%d %H:%M}; draft a new release to change it"
            }
        )


@transaction.atomic
def release_refresh_gates(*, release: Release, actor: User) -> Release:
    """Compute a draft's gates again from the newest runs (a replay or an evaluation finished
    since)."""
    release = Release.objects.select_for_update().get(pk=release.pk)
    _require_draft(release)
    gates = checkpoint_release_gates(
        version=release.harness_version,
        checkpoint=release.checkpoint_path,
        fingerprint=release.checkpoint_fingerprint,
    )
    before = {g["name"]: g["status"] for g in release.gates}
    release.gates, release.gates_at = [g.to_dict() for g in gates], timezone.now()
    release.save(update_fields=["gates", "gates_at"])
    audit_record(
        actor=actor,
        action="release.gates.refresh",
        harness=release.harness_version.harness,
        target=f"release #{release.pk}",
        data={"before": before, "after": {g.name: g.status for g in gates}},
    )
    return release


def folder_changes(*, path: str, recorded: list[dict[str, Any]]) -> list[str]:
    """Each file of ``path`` that differs from the list recorded at drafting, named (empty: the same
    bytes)."""
    from harness.checkpoints import files_differences, folder_files

    if not recorded:
        return ["no file list was recorded (drafted before releases covered every file)"]
    try:
        return files_differences(recorded, folder_files(path))
    except CheckpointError as error:
        return [str(error)]


@transaction.atomic
def release_decide(
    *, release: Release, decision: str, reason: str, override_reason: str, actor: User
) -> Release:
    """A reviewer approves or rejects a draft. Approval goes through the gates as stored (the ones
    the reviewer read): a blocking gate needs ``override_reason``; a checkpoint or head changed on
    disk since drafting refuses it."""
    from studio.accounts.roles import user_can

    if not user_can(actor, "release.approve"):
        raise ReleaseRefused(
            {"decision": "decision: approving or rejecting a release needs the reviewer role"}
        )
    release = (
        Release.objects.select_for_update()
        .select_related("harness_version__harness")
        .get(pk=release.pk)
    )
    errors: dict[str, str] = {}
    if decision not in DECISIONS:
        errors["decision"] = f"decision: one of {', '.join(DECISIONS)}, not {decision[:40]!r}"
    reason = _clean_text(
        reason, "reason", errors, required=True, what="say why the release is approved or rejected"
    )
    override_reason = _clean_text(override_reason, "override_reason", errors)
    if errors:
        raise ReleaseRefused(errors)
    _require_draft(release)
    overridden: list[Gate] = []
    if decision == "approve":
        try:
            overridden = gates_check_promotion(
                gates=[Gate.from_dict(g) for g in release.gates],
                override_reason=override_reason,
                action="Approving a release",
                verb="approve it",
            )
        except ValueError as refused:
            # a refusal of the gates, not a malformed field: the message starts with what was
            # refused
            raise ReleaseRefused({"override_reason": str(refused)}) from None
        for name, path, recorded in (
            ("checkpoint", release.checkpoint_path, release.checkpoint_files),
            ("draft_head", release.draft_head_path, release.draft_head_files),
        ):
            changes = folder_changes(path=path, recorded=recorded) if path else []
            if changes:
                shown = "; ".join(changes[:5]) + (
                    f"; and {len(changes) - 5} more" if len(changes) > 5 else ""
                )
                errors[name] = (
                    f"{name}: {path} is no longer the folder that was drafted and gated ({shown}); "
                    "draft a new release for it"
                )
        if errors:
            raise ReleaseRefused(errors)
    release.status = Release.APPROVED if decision == "approve" else Release.REJECTED
    release.decided_by, release.decided_at = actor, timezone.now()
    release.decision_reason = reason
    release.override_reason = override_reason if overridden else ""
    # What the decision vouches for is signed now, once, and stored: a download serves these bytes,
    # so a row edited later (a status set in the database alone) never gets a valid signature.
    from serving.release import key_id, sign_manifest
    from studio.releases.selectors import release_manifest_content
    from studio.releases.signing import release_signing_key

    try:
        key = release_signing_key()
    except ImproperlyConfigured as error:  # a missing key file is never silently replaced
        raise ReleaseRefused(
            {"decision": f"decision: the studio cannot sign the manifest: {error}"}
        ) from None
    release.signed_manifest = sign_manifest(release_manifest_content(release=release), key)
    release.save(
        update_fields=[
            "status",
            "decided_by",
            "decided_at",
            "decision_reason",
            "override_reason",
            "signed_manifest",
        ]
    )
    audit_record(
        actor=actor,
        action=f"release.{decision}",
        harness=release.harness_version.harness,
        target=f"release #{release.pk}",
        data={
            "reason": reason,
            "override_reason": release.override_reason,
            "overridden": [f"{g.name} {g.status}" for g in overridden],
            "version": release.harness_version.number,
            "checkpoint": release.checkpoint_path,
            "key_id": key_id(key.public_key()),
        },
    )
    return release


def releases_sign_decided(*, actor: User | None = None) -> tuple[list[int], list[str]]:
    """Sign, once, the decided releases that have no stored signed manifest (decided before signing
    moved to the decision), but only those whose decision is on record: a decider and the audit
    event of that decision. (signed release ids, why each other one was left unsigned). A row whose
    status was set in the database alone stays unsigned, and the launcher refuses it."""
    from studio.audit.models import AuditEvent

    signed, skipped = [], []
    for release in (
        Release.objects.exclude(status=Release.DRAFT)
        .filter(signed_manifest__isnull=True)
        .order_by("pk")
    ):
        action = "release.approve" if release.status == Release.APPROVED else "release.reject"
        recorded = AuditEvent.objects.filter(
            action=action, target=f"release #{release.pk}"
        ).exists()
        if release.decided_by is None or not recorded:
            skipped.append(
                f"release #{release.pk}: {release.status} with no "
                f"{'decider' if release.decided_by is None else action + ' audit event'}; "
                "left unsigned (draft it again and decide it in the studio)"
            )
            continue
        from serving.release import key_id, sign_manifest
        from studio.releases.selectors import release_manifest_content
        from studio.releases.signing import release_signing_key

        key = release_signing_key()
        release.signed_manifest = sign_manifest(release_manifest_content(release=release), key)
        release.save(update_fields=["signed_manifest"])
        audit_record(
            actor=actor,
            action="release.sign",
            harness=release.harness_version.harness,
            target=f"release #{release.pk}",
            data={
                "key_id": key_id(key.public_key()),
                "why": "decided before signing at decision time",
            },
        )
        signed.append(release.pk)
    return signed, skipped
