"""Reads for releases: lists, one release, the draft form's choices and the manifest's content."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from studio.releases.models import Release


def release_list(*, limit: int = 200) -> QuerySet[Release]:
    return Release.objects.select_related(
        "harness_version__harness", "drafted_by", "decided_by", "checkpoint_run"
    )[:limit]


def release_get(*, release_id: int) -> Release:
    return Release.objects.select_related(
        "harness_version__harness", "drafted_by", "decided_by", "checkpoint_run"
    ).get(pk=release_id)


def release_form_choices() -> dict[str, Any]:
    """The registry's checkpoints, the studio's MTP heads (with the policy each was adapted to) and
    the Harness versions (newest first) for the draft form."""
    from studio.harnesses.models import HarnessVersion
    from studio.training.selectors import checkpoint_choices, draft_heads

    versions = HarnessVersion.objects.select_related("harness").order_by(
        "harness__name", "-number"
    )[:100]
    return {
        "checkpoints": checkpoint_choices(),
        "draft_heads": [
            (
                str(h.path),
                f"MTP run #{h.run.pk}, adapted to {h.card.get('policy') or '(no policy named)'}",
            )
            for h in draft_heads()
        ],
        "harness_versions": [f"{v.harness.name}@v{v.number}" for v in versions],
    }


def _when(value) -> str | None:
    return value.isoformat() if value else None


def release_manifest(*, release: Release) -> dict[str, Any]:
    """The manifest a download serves: a decided release's as it was signed when the reviewer
    decided (``release_decide`` stores it; a selector never signs), else the unsigned content (a
    draft, or a row whose status was set without a decision), which the launcher refuses with
    ``signature: missing``."""
    if release.status != Release.DRAFT and release.signed_manifest:
        return release.signed_manifest
    return release_manifest_content(release=release)


def release_manifest_content(*, release: Release) -> dict[str, Any]:
    """The manifest's content from the row (format: ``serving.release``), unsigned."""
    from harness.draft_head_files import TOKEN_MAP_FILE
    from serving.release import FORMAT

    version = release.harness_version
    head = None
    if release.draft_head_path:
        from pathlib import Path

        head = {
            "path": release.draft_head_path,
            "fingerprint": release.draft_head_fingerprint,
            "files": release.draft_head_files,
            "card": release.draft_head_card or {},
            "token_map": TOKEN_MAP_FILE
            if (Path(release.draft_head_path) / TOKEN_MAP_FILE).is_file()
            else None,
        }
    manifest = {
        "format": FORMAT,
        "release": {
            "id": release.pk,
            "status": release.status,
            "drafted_by": release.drafted_by.username if release.drafted_by else "(removed user)",
            "drafted_at": _when(release.created_at),
            "notes": release.notes,
            "decided_by": release.decided_by.username if release.decided_by else None,
            "decided_at": _when(release.decided_at),
            "reason": release.decision_reason,
            "override_reason": release.override_reason,
        },
        "checkpoint": {
            "path": release.checkpoint_path,
            "fingerprint": release.checkpoint_fingerprint,
            "files": release.checkpoint_files,
            "run_id": release.checkpoint_run_id,
        },
        "draft_head": head,
        "harness": {
            "name": version.harness.name,
            "number": version.number,
            "digest": version.digest,
        },
        "gates": release.gates,
        "gates_at": _when(release.gates_at),
    }
    return manifest


def release_newest_approved(*, harness) -> Release | None:
    """The newest approved release of ``harness``: what production serves."""
    return (
        Release.objects.filter(harness_version__harness=harness, status=Release.APPROVED)
        .order_by("-decided_at", "-pk")
        .first()
    )
