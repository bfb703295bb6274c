"""Writes for Harnesses: versions, imports, labels, drafts, conflicts, commits.

Every function is keyword-only, validates through the Harness library and
records an audit event. Errors a user can cause are StudioError subclasses
whose message names the file, field or object and what would be valid.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import F, Max
from django.utils import timezone

from harness.text_edit import (
    TextEditError,
    hook_action_problem,
    hook_event_problem,
    id_problem,
    insert_hook,
    new_skill_text,
)
from studio.accounts.roles import user_can
from studio.audit.services import audit_record
from studio.harnesses.bundles import (
    MAX_FILE_BYTES,
    REFUSED,
    HarnessValidationError,
    Problem,
    bundle_load_for_version,
    bundle_problems,
    bundle_summary,
    files_from_zip,
    load_yaml,
)
from studio.harnesses.diffs import summary_against_parent
from studio.harnesses.models import (
    Draft,
    DraftConflict,
    FileBlob,
    Harness,
    HarnessVersion,
    Label,
    LabelMove,
)
from studio.harnesses.selectors import version_files


class StudioError(ValueError):
    """A mistake a user can make; the message says what would be valid."""


class InvalidBundle(StudioError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(str(p) for p in problems[:5]) + (" ..." if len(problems) > 5 else ""))


class DuplicateVersion(StudioError):
    def __init__(self, version: HarnessVersion):
        self.version = version
        super().__init__(f"these files are identical to {version} (digest {version.digest[:12]})")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def blobs_store(*, files: dict[str, str]) -> dict[str, str]:
    """Store each text once by its sha256; returns the tree {path: sha256}."""
    tree = {path: _sha(text) for path, text in files.items()}
    by_sha = {tree[path]: text for path, text in files.items()}
    existing = set(FileBlob.objects.filter(sha256__in=list(by_sha)).values_list("sha256", flat=True))
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
            f"manifest.yaml: name: the bundle is named {bundle.name!r} but this Harness is {harness.name!r}"
        )
    # Lock the Harness row so two commits cannot take the same version number.
    Harness.objects.select_for_update().filter(pk=harness.pk).first()
    existing = HarnessVersion.objects.filter(harness=harness, digest=bundle.digest).first()
    if existing is not None:
        raise DuplicateVersion(existing)
    number = (HarnessVersion.objects.filter(harness=harness).aggregate(n=Max("number"))["n"] or 0) + 1
    parent_summary = summary_against_parent(parent=parent, bundle=bundle) if parent is not None else None
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
        data={"digest": version.digest, "parent": parent.number if parent else None, "message": message},
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
    """Import a bundle: creates the Harness if new; identical content returns the existing version."""
    try:
        bundle = bundle_load_for_version(files)
    except HarnessValidationError as error:
        raise InvalidBundle(error.problems) from None
    harness, harness_created = Harness.objects.get_or_create(
        name=bundle.name, defaults={"created_by": author}
    )
    if harness_created:
        audit_record(actor=author, action="harness.create", harness=harness, target=harness.name, data={})
    existing = HarnessVersion.objects.filter(harness=harness, digest=bundle.digest).first()
    if existing is not None:
        return ImportResult(harness=harness, version=existing, created=False)
    parent = HarnessVersion.objects.filter(harness=harness).order_by("-number").first()
    version = harness_version_create(
        harness=harness, files=bundle.files, author=author, message=message, parent=parent
    )
    return ImportResult(harness=harness, version=version, created=True, harness_created=harness_created)


def harness_import_zip(*, data: bytes, author: User | None, message: str, max_bytes: int) -> ImportResult:
    """Import a bundle from the bytes of a .zip of its directory."""
    return harness_import(files=files_from_zip(data, max_bytes=max_bytes), author=author, message=message)


# --- labels -----------------------------------------------------------------------

LABEL_PATTERN = r"[a-z0-9_-]{1,40}"
"""A label name: an ASCII slug, as the URLs that name a label (``<slug:label>``) accept."""


def _check_label_permission(*, actor: User, name: str) -> None:
    if name == Label.PRODUCTION:
        if not user_can(actor, "label.production"):
            raise PermissionDenied("moving the production label needs the reviewer role")
    elif not user_can(actor, "label.move"):
        raise PermissionDenied("moving labels needs the operator or reviewer role")


@transaction.atomic
def label_move(
    *, harness: Harness, name: str, version: HarnessVersion, actor: User, reason: str, kind: str = "set"
) -> Label:
    """Point label `name` at `version` and record the move; production needs a reviewer and a reason."""
    name = name.strip().lower()
    if not re.fullmatch(LABEL_PATTERN, name):
        raise StudioError(f"label: use 1-40 of a-z, 0-9, '-' or '_' (e.g. staging, canary-eu), not {name!r}")
    if version.harness_id != harness.pk:
        raise StudioError(f"version: {version} does not belong to {harness.name}")
    _check_label_permission(actor=actor, name=name)
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
                label = Label.objects.create(harness=harness, name=name, version=version, updated_by=actor)
        except IntegrityError:
            raise StudioError(f"label: {name} was just created by someone else; reload and try again") from None
    else:
        label.version = version
        label.updated_by = actor
        label.save(update_fields=["version", "updated_by", "updated_at"])
    if kind == "set" and name == Label.PRODUCTION:
        kind = "promote"
    LabelMove.objects.create(
        label=label, from_version=previous, to_version=version, kind=kind, reason=reason, moved_by=actor
    )
    audit_record(
        actor=actor,
        action=f"label.{kind}",
        harness=harness,
        target=f"{harness.name}@{name}",
        data={"from": previous.number if previous else None, "to": version.number, "reason": reason},
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


# --- drafts -----------------------------------------------------------------------


def _problems_to_json(problems: list[Problem]) -> list[dict]:
    return [{"file": p.file, "line": p.line, "field": p.field, "message": p.message} for p in problems]


@transaction.atomic
def draft_create(*, harness: Harness, base_version: HarnessVersion, owner: User, title: str) -> Draft:
    """A new draft for `owner` holding a copy of `base_version`'s files."""
    if base_version.harness_id != harness.pk:
        raise StudioError(f"base version: {base_version} does not belong to {harness.name}")
    title = title.strip() or f"Changes on v{base_version.number}"
    draft = Draft.objects.create(
        harness=harness,
        base_version=base_version,
        owner=owner,
        title=title[:200],
        files=version_files(version=base_version),
        updated_by=owner,
    )
    audit_record(
        actor=owner,
        action="draft.create",
        harness=harness,
        target=f"draft #{draft.pk}",
        data={"base": base_version.number, "title": draft.title},
    )
    return draft


def _check_draft_writable(*, draft: Draft, actor: User) -> None:
    if draft.status != Draft.OPEN:
        raise StudioError(f"draft #{draft.pk} is {draft.status}; start a new draft to make more changes")
    if draft.owner_id != actor.pk and not user_can(actor, "harness.edit"):
        raise PermissionDenied("only the draft's owner or an editor may change it")


@dataclass
class SaveResult:
    draft: Draft
    conflict: DraftConflict | None
    problems: list[dict]


def draft_file_save(
    *, draft: Draft, path: str, text: str, base_revision: int, actor: User
) -> SaveResult:
    """Save one file of a draft if nobody saved since `base_revision`; otherwise keep it as a conflict.

    The draft is saved even when the bundle has validation problems (nothing is
    lost); the problems are stored and shown, and they block the commit.
    """
    _check_draft_writable(draft=draft, actor=actor)
    path = _clean_path(path)
    text = text.replace("\r\n", "\n")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise StudioError(f"{path}: the text is {size} bytes, larger than {MAX_FILE_BYTES // 1024} KiB "
                          "(the limit per bundle file); nothing was saved")
    with transaction.atomic():
        current = Draft.objects.select_for_update().get(pk=draft.pk)
        if current.revision != base_revision:
            conflict = DraftConflict.objects.create(
                draft=current,
                path=path,
                author=actor,
                base_revision=base_revision,
                seen_revision=current.revision,
                their_text=current.files.get(path, ""),
                my_text=text,
            )
            audit_record(
                actor=actor,
                action="draft.conflict",
                harness=current.harness,
                target=f"draft #{current.pk} {path}",
                data={"base_revision": base_revision, "current_revision": current.revision},
            )
            return SaveResult(draft=current, conflict=conflict, problems=current.problems)
        files = dict(current.files)
        files[path] = text
        found = bundle_problems(files)
        refused = next((p for p in found if p.file == path and p.field == REFUSED), None)
        if refused is not None:
            # text the reader refuses (aliases, too deep) can never become valid, and once
            # stored, every page and job that reads the draft would have to refuse it again
            raise StudioError(f"{refused}; nothing was saved")
        problems = _problems_to_json(found)
        updated = Draft.objects.filter(pk=current.pk, revision=base_revision).update(
            files=files, problems=problems, revision=F("revision") + 1, updated_by=actor, updated_at=timezone.now()
        )
        assert updated == 1  # the row is locked; a miss here would be a bug, not a race
        current.refresh_from_db()
    audit_record(
        actor=actor,
        action="draft.save",
        harness=current.harness,
        target=f"draft #{current.pk} {path}",
        data={"revision": current.revision, "problems": len(problems)},
    )
    return SaveResult(draft=current, conflict=None, problems=problems)


def _clean_path(path: str) -> str:
    path = path.strip().strip("/")
    parts = path.split("/")
    if not path or any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        raise StudioError(f"path: {path!r} is not a relative file path inside the bundle")
    return path


def draft_skill_add(*, draft: Draft, name: str, kind: str, description: str, base_revision: int, actor: User) -> SaveResult:
    """Add skills/<name>/SKILL.md to a draft from the Harness's skill template."""
    name = name.strip()
    try:
        text = new_skill_text(name=name, kind=kind, description=description)
    except TextEditError as error:
        raise StudioError(str(error)) from None
    path = f"skills/{name}/SKILL.md"
    if path in draft.files:
        raise StudioError(f"name: the skill {name} already exists in this draft")
    return draft_file_save(draft=draft, path=path, text=text, base_revision=base_revision, actor=actor)


def _form_yaml(text: str, *, field: str, example: str):
    """A form field's YAML, read by the Harness reader with a bundle file's bounds; JSON-like values."""
    data, _lines, problems = load_yaml(text, file=field)
    if problems:
        first = problems[0]
        reason = first.message.removeprefix("invalid YAML: ")
        what = first.message if first.field == REFUSED else f"not YAML ({reason}, line {first.line})"
        raise StudioError(f"{field}: {what}; e.g. {example}")
    try:
        json.dumps(data)
    except (TypeError, ValueError):
        raise StudioError(f"{field}: only text, numbers, true/false, lists and mappings "
                          f"(quote a date or a !!tag); e.g. {example}") from None
    return data


def draft_hook_add(
    *,
    draft: Draft,
    hook_id: str,
    event: str,
    hook_type: str,
    matcher: str,
    params_text: str,
    action: str,
    message: str,
    base_revision: int,
    actor: User,
) -> SaveResult:
    """Add one hook to the draft's hooks.yaml from the structured form, then save as usual.

    The hook is inserted as YAML text at the end of the `hooks:` list, wherever
    that list stands in the file, so the operator's comments and layout stay;
    the normal save validates it, so a wrong parameter shows up inline at its
    line like any other edit.
    """
    for form_field, problem in (("id", id_problem(hook_id)), ("event", hook_event_problem(event)),
                           ("on_fail", hook_action_problem(action))):
        if problem:
            raise StudioError(f"{form_field}: {problem}")
    params = _form_yaml(params_text, field="params", example="{max_chars: 200}") if params_text.strip() else {}
    if not isinstance(params, dict):
        raise StudioError("params: a mapping of parameter names to values, e.g. {max_chars: 200}")
    hook = {"id": hook_id, "event": event, "type": hook_type}
    if matcher.strip():
        hook["matcher"] = matcher.strip()
    if params:
        hook["params"] = params
    hook["on_fail"] = {"action": action, **({"message": message.strip()} if message.strip() else {})}
    try:
        text = insert_hook(draft.files.get("hooks.yaml", ""), hook)
    except TextEditError as error:
        raise StudioError(str(error)) from None
    return draft_file_save(draft=draft, path="hooks.yaml", text=text, base_revision=base_revision, actor=actor)


def draft_file_delete(*, draft: Draft, path: str, base_revision: int, actor: User) -> Draft:
    """Remove a file (e.g. a skill) from a draft."""
    _check_draft_writable(draft=draft, actor=actor)
    with transaction.atomic():
        current = Draft.objects.select_for_update().get(pk=draft.pk)
        if current.revision != base_revision:
            raise StudioError("the draft changed since you opened it; reload it and delete again")
        if path not in current.files:
            raise StudioError(f"path: {path} is not in this draft")
        files = {p: t for p, t in current.files.items() if p != path}
        current.files = files
        current.problems = _problems_to_json(bundle_problems(files))
        current.revision += 1
        current.updated_by = actor
        current.save()
    audit_record(actor=actor, action="draft.delete_file", harness=current.harness, target=f"draft #{current.pk} {path}", data={})
    return current


def draft_conflict_resolve(*, conflict: DraftConflict, text: str, actor: User) -> SaveResult:
    """Save the merged text of a conflicted file on top of the draft's current revision."""
    if conflict.author_id != actor.pk and not user_can(actor, "harness.edit"):
        raise PermissionDenied("only the author of the unsaved text may resolve this conflict")
    draft = Draft.objects.get(pk=conflict.draft_id)
    result = draft_file_save(
        draft=draft, path=conflict.path, text=text, base_revision=draft.revision, actor=actor
    )
    if result.conflict is None:
        conflict.resolved_at = timezone.now()
        conflict.save(update_fields=["resolved_at"])
    return result


@transaction.atomic
def draft_commit(*, draft: Draft, actor: User, message: str) -> HarnessVersion:
    """Turn a valid draft into a new version whose parent is the draft's base version."""
    _check_draft_writable(draft=draft, actor=actor)
    draft = Draft.objects.select_for_update().get(pk=draft.pk)
    problems = bundle_problems(draft.files)
    if problems:
        raise InvalidBundle(problems)
    try:
        version = harness_version_create(
            harness=draft.harness,
            files=draft.files,
            author=actor,
            message=message,
            parent=draft.base_version,
        )
    except DuplicateVersion as error:
        if error.version.pk == draft.base_version_id:
            raise StudioError("nothing to commit: the draft is identical to its base version") from None
        raise
    draft.status = Draft.COMMITTED
    draft.committed_version = version
    draft.save(update_fields=["status", "committed_version", "updated_at"])
    audit_record(
        actor=actor,
        action="draft.commit",
        harness=draft.harness,
        target=f"draft #{draft.pk} -> v{version.number}",
        data={"version": version.number, "message": version.message},
    )
    return version


def draft_discard(*, draft: Draft, actor: User) -> Draft:
    _check_draft_writable(draft=draft, actor=actor)
    draft.status = Draft.DISCARDED
    draft.save(update_fields=["status", "updated_at"])
    audit_record(actor=actor, action="draft.discard", harness=draft.harness, target=f"draft #{draft.pk}", data={})
    return draft
