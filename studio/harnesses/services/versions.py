"""Versions: immutable, content-addressed snapshots of a bundle, and bundle imports."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from studio.audit.services import audit_record
from studio.harnesses.bundles import (
    HarnessValidationError,
    bundle_load_for_version,
    bundle_summary,
    files_from_zip,
)
from studio.harnesses.diffs import summary_against_parent
from studio.harnesses.models import FileBlob, Harness, HarnessVersion, text_sha256
from studio.harnesses.services.errors import DuplicateVersion, InvalidBundle, StudioError


def blobs_store(*, files: dict[str, str]) -> dict[str, str]:
    """Store each text once by its sha256; returns the tree {path: sha256}."""
    tree = {path: text_sha256(text) for path, text in files.items()}
    by_sha = {tree[path]: text for path, text in files.items()}
    existing = set(
        FileBlob.objects.filter(sha256__in=list(by_sha)).values_list("sha256", flat=True)
    )
    FileBlob.objects.bulk_create(
        [FileBlob(sha256=sha, text=text) for sha, text in by_sha.items() if sha not in existing],
        ignore_conflicts=True,
    )
    return dict(sorted(tree.items()))


@transaction.atomic
def harness_version_create(
    *,
    harness: Harness,
    files: dict[str, str],
    author: User | None,
    message: str,
    parent: HarnessVersion | None,
) -> HarnessVersion:
    """A new immutable version of `harness` holding `files` (validated; content-addressed)."""
    message = message.strip()
    if not message:
        raise StudioError("message: say what changed in this version")
    try:
        bundle = bundle_load_for_version(files)
    except HarnessValidationError as error:
        raise InvalidBundle(error.problems) from None
    if bundle.name != harness.name:
        raise StudioError(
            "manifest.yaml: name: the bundle is named "
            f"{bundle.name!r} but this Harness is {harness.name!r}"
        )
    # Lock the Harness row so two commits cannot take the same version number.
    Harness.objects.select_for_update().filter(pk=harness.pk).first()
    existing = HarnessVersion.objects.filter(harness=harness, digest=bundle.digest).first()
    if existing is not None:
        raise DuplicateVersion(existing)
    number = (
        HarnessVersion.objects.filter(harness=harness).aggregate(n=Max("number"))["n"] or 0
    ) + 1
    parent_summary = (
        summary_against_parent(parent=parent, bundle=bundle) if parent is not None else None
    )
    version = HarnessVersion.objects.create(
        harness=harness,
        number=number,
        parent=parent,
        digest=bundle.digest,
        tree=blobs_store(files=bundle.files),
        message=message,
        author=author,
        summary=bundle_summary(bundle).to_dict(),
        parent_summary=parent_summary,
    )
    audit_record(
        actor=author,
        action="version.create",
        harness=harness,
        target=str(version),
        data={
            "digest": version.digest,
            "parent": parent.number if parent else None,
            "message": message,
        },
    )
    return version


@dataclass
class ImportResult:
    harness: Harness
    version: HarnessVersion
    created: bool
    harness_created: bool = False
    notes: list[str] = field(default_factory=list)


@transaction.atomic
def harness_import(*, files: dict[str, str], author: User | None, message: str) -> ImportResult:
    """Import a bundle: creates the Harness if new; identical content returns the existing
    version."""
    try:
        bundle = bundle_load_for_version(files)
    except HarnessValidationError as error:
        raise InvalidBundle(error.problems) from None
    harness, harness_created = Harness.objects.get_or_create(
        name=bundle.name, defaults={"created_by": author}
    )
    if harness_created:
        audit_record(
            actor=author, action="harness.create", harness=harness, target=harness.name, data={}
        )
    existing = HarnessVersion.objects.filter(harness=harness, digest=bundle.digest).first()
    if existing is not None:
        return ImportResult(harness=harness, version=existing, created=False)
    parent = HarnessVersion.objects.filter(harness=harness).order_by("-number").first()
    version = harness_version_create(
        harness=harness, files=bundle.files, author=author, message=message, parent=parent
    )
    return ImportResult(
        harness=harness, version=version, created=True, harness_created=harness_created
    )


def harness_import_zip(
    *, data: bytes, author: User | None, message: str, max_bytes: int
) -> ImportResult:
    """Import a bundle from the bytes of a .zip of its directory."""
    return harness_import(
        files=files_from_zip(data, max_bytes=max_bytes), author=author, message=message
    )
