"""Reads for Harnesses: lists, a version's files, history, drafts."""

from __future__ import annotations

from django.db.models import Count, F, Prefetch, QuerySet

from studio.harnesses.models import (
    Draft,
    DraftConflict,
    FileBlob,
    Harness,
    HarnessVersion,
    Label,
    LabelMove,
    text_sha256,
)


def harness_list() -> QuerySet[Harness]:
    """Every Harness with its labels and version count (the home page)."""
    return Harness.objects.annotate(version_count=Count("versions")).prefetch_related(
        Prefetch("labels", queryset=Label.objects.select_related("version").order_by("name"))
    )


def harness_find(*, name: str) -> Harness | None:
    """The Harness named ``name``, or None."""
    return Harness.objects.filter(name=name).first()


def harness_get(*, name: str) -> Harness:
    """The Harness named ``name`` (``Harness.DoesNotExist`` when there is none)."""
    return Harness.objects.get(name=name)


def version_choices(*, limit: int = 50) -> list[str]:
    """``name@vN`` of the versions a form offers, by Harness name and newest first."""
    return [
        f"{v.harness.name}@v{v.number}"
        for v in HarnessVersion.objects.select_related("harness").order_by(
            "harness__name", "-number"
        )[:limit]
    ]


def harness_latest_version(*, harness: Harness) -> HarnessVersion | None:
    return harness.versions.order_by("-number").first()


def version_list(*, harness: Harness) -> QuerySet[HarnessVersion]:
    return (
        HarnessVersion.objects.filter(harness=harness)
        .select_related("author")
        .prefetch_related("labels")
        .annotate(parent_number=F("parent__number"))
        .defer("tree")
        .order_by("-number")
    )


def version_get(*, harness: Harness, number: int) -> HarnessVersion:
    return HarnessVersion.objects.select_related("harness", "author", "parent").get(
        harness=harness, number=number
    )


def blob_texts(*, shas: list[str]) -> dict[str, str]:
    return dict(FileBlob.objects.filter(sha256__in=list(set(shas))).values_list("sha256", "text"))


def version_files(*, version: HarnessVersion, paths: list[str] | None = None) -> dict[str, str]:
    """{path: text} of a version, or of only `paths` of it."""
    tree = (
        version.tree if paths is None else {p: version.tree[p] for p in paths if p in version.tree}
    )
    texts = blob_texts(shas=list(tree.values()))
    return {path: texts[sha] for path, sha in sorted(tree.items())}


def label_history(*, harness: Harness, limit: int = 100) -> QuerySet[LabelMove]:
    return (
        LabelMove.objects.filter(label__harness=harness)
        .select_related("label", "from_version", "to_version", "moved_by")
        .order_by("-created_at", "-id")[:limit]
    )


def draft_list(
    *, harness: Harness | None = None, owner=None, status: str | None = Draft.OPEN
) -> QuerySet[Draft]:
    drafts = Draft.objects.select_related("harness", "base_version", "owner").defer("files")
    if harness is not None:
        drafts = drafts.filter(harness=harness)
    if owner is not None:
        drafts = drafts.filter(owner=owner)
    if status is not None:
        drafts = drafts.filter(status=status)
    return drafts


def draft_changed_paths(*, draft: Draft) -> dict[str, str]:
    """{path: 'added'|'removed'|'changed'} between the draft and its base version."""
    base = draft.base_version.tree
    changes: dict[str, str] = {}
    for path, text in draft.files.items():
        sha = text_sha256(text)
        if path not in base:
            changes[path] = "added"
        elif base[path] != sha:
            changes[path] = "changed"
    for path in base:
        if path not in draft.files:
            changes[path] = "removed"
    return dict(sorted(changes.items()))


def draft_open_conflicts(*, draft: Draft) -> QuerySet[DraftConflict]:
    return draft.conflicts.filter(resolved_at__isnull=True).select_related("author")


def version_default() -> HarnessVersion | None:
    """The version forms pre-select: the one at a production label (the most recently moved, where
    several Harnesses have one), the version viewers are served; None before anything was
    promoted. A user can always pick another, e.g. the demo's planted defect."""
    label = (
        Label.objects.select_related("version")
        .filter(name=Label.PRODUCTION)
        .order_by("-updated_at", "-pk")
        .first()
    )
    return label.version if label is not None else None


def label_production(*, harness_id: int) -> Label | None:
    """The production label of a Harness, with its version; None before anything was promoted."""
    return (
        Label.objects.select_related("version")
        .filter(harness_id=harness_id, name=Label.PRODUCTION)
        .first()
    )


def label_get(*, harness: Harness, name: str) -> Label:
    """One label of the Harness, with its version (``Label.DoesNotExist`` when it has none such)."""
    return Label.objects.select_related("version").get(harness=harness, name=name)


def label_list(*, harness: Harness) -> QuerySet[Label]:
    """The Harness's labels, each with ``rollback_to``: the version number ``label_rollback`` would
    move it back to (None for a label with no earlier version, which offers no Roll back)."""
    from django.db.models import OuterRef, Subquery

    earlier = (
        LabelMove.objects.filter(label=OuterRef("pk"), from_version__isnull=False)
        .order_by("-created_at", "-id")
        .values("from_version__number")[:1]
    )
    return harness.labels.select_related("version", "updated_by").annotate(
        rollback_to=Subquery(earlier)
    )


def draft_get(*, draft_id: int) -> Draft:
    """One draft with its Harness, base version and owner (``Draft.DoesNotExist`` when none)."""
    return Draft.objects.select_related("harness", "base_version", "owner").get(pk=draft_id)


def draft_file_text(*, draft_id: int, path: str) -> str:
    """A file's text in the draft as stored now ("" when the draft no longer holds it)."""
    return Draft.objects.get(pk=draft_id).files.get(path, "")


def conflict_get(*, conflict_id: int) -> DraftConflict:
    """One save conflict with its draft, Harness and author (``DraftConflict.DoesNotExist``)."""
    return DraftConflict.objects.select_related("draft", "draft__harness", "author").get(
        pk=conflict_id
    )
