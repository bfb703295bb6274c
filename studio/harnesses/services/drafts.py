"""Drafts: the editor's working copies of a version, saved with optimistic locking, then committed.

A save that lost a race is kept as a conflict for its author to resolve; an
invalid draft is saved with its problems (nothing is lost), which block the
commit. The "add a skill" and "add a hook" forms write their text through
``harness.text_edit`` (the skill template, a hook inserted into the ``hooks:``
list wherever it stands), then save like any edit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from harness.bundle import path_problem
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
from studio.harnesses.bundles import MAX_FILE_BYTES, REFUSED, Problem, bundle_problems, load_yaml
from studio.harnesses.models import Draft, DraftConflict, Harness, HarnessVersion
from studio.harnesses.selectors import version_files
from studio.harnesses.services.errors import DuplicateVersion, InvalidBundle, StudioError
from studio.harnesses.services.versions import harness_version_create


def problems_to_json(*, problems: list[Problem]) -> list[dict]:
    return [problem.to_dict() for problem in problems]


@transaction.atomic
def draft_create(
    *, harness: Harness, base_version: HarnessVersion, owner: User, title: str
) -> Draft:
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


def draft_check_writable(*, draft: Draft, actor: User, authorised_as: str = "") -> None:
    """StudioError unless the draft is open; PermissionDenied unless ``actor`` owns it or may edit
    Harnesses.

    ``authorised_as`` names the caller's own, already checked, right to act on this draft (an
    evolution stage's reviewer committing the candidate an operator edited); it replaces the
    owner-or-editor check, never the status check.
    """
    if draft.status != Draft.OPEN:
        raise StudioError(
            f"draft #{draft.pk} is {draft.status}; start a new draft to make more changes"
        )
    if not authorised_as and draft.owner_id != actor.pk and not user_can(actor, "harness.edit"):
        raise PermissionDenied("only the draft's owner or an editor may change it")


@dataclass
class SaveResult:
    draft: Draft
    conflict: DraftConflict | None
    problems: list[dict]


def draft_file_save(
    *, draft: Draft, path: str, text: str, base_revision: int, actor: User
) -> SaveResult:
    """Save one file of a draft if nobody saved since `base_revision`; otherwise keep it as a
    conflict.

    The draft is saved even when the bundle has validation problems (nothing is
    lost); the problems are stored and shown, and they block the commit.
    """
    draft_check_writable(draft=draft, actor=actor)
    path = _clean_path(path)
    text = text.replace("\r\n", "\n")
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise StudioError(
            f"{path}: the text is {size} bytes, larger than {MAX_FILE_BYTES // 1024} KiB "
            "(the limit per bundle file); nothing was saved"
        )
    # Validating the bundle takes tens of milliseconds. Inside the transaction it would hold the
    # write lock for all of them, and on SQLite (the demo's database) that lock is the whole
    # database's: every save, job heartbeat and sign-in of the studio would queue behind it. So the
    # files as they stand at base_revision are validated first; the transaction only checks that
    # the draft is still at that revision (its files change only with its revision) and stores.
    seen = Draft.objects.only("files", "revision").get(pk=draft.pk)
    checked = _checked_files(seen.files, path, text) if seen.revision == base_revision else None
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
        files, problems = (
            checked if checked is not None else _checked_files(current.files, path, text)
        )
        draft_files_store(draft=current, files=files, problems=problems, actor=actor)
    audit_record(
        actor=actor,
        action="draft.save",
        harness=current.harness,
        target=f"draft #{current.pk} {path}",
        data={"revision": current.revision, "problems": len(problems)},
    )
    return SaveResult(draft=current, conflict=None, problems=problems)


def _checked_files(
    files: dict[str, str], path: str, text: str
) -> tuple[dict[str, str], list[dict]]:
    """The draft's files with ``path`` set to ``text``, and their problems; refused text raises."""
    files = {**files, path: text}
    found = bundle_problems(files)
    refused = next((p for p in found if p.file == path and p.field == REFUSED), None)
    if refused is not None:
        # text the reader refuses (aliases, too deep) can never become valid, and once
        # stored, every page and job that reads the draft would have to refuse it again
        raise StudioError(f"{refused}; nothing was saved")
    return files, problems_to_json(problems=found)


def draft_files_store(
    *, draft: Draft, files: dict[str, str], problems: list[dict], actor: User
) -> Draft:
    """Store new files and their problems as the draft's next revision.

    ``draft`` is the row its caller locked (select_for_update) and checked, inside the
    caller's transaction; it is refreshed in place."""
    updated = Draft.objects.filter(pk=draft.pk, revision=draft.revision).update(
        files=files,
        problems=problems,
        revision=F("revision") + 1,
        updated_by=actor,
        updated_at=timezone.now(),
    )
    assert updated == 1  # the row is locked; a miss here would be a bug, not a race
    draft.refresh_from_db()
    return draft


def _clean_path(path: str) -> str:
    """The bundle path rule (harness.bundle.path_problem), before anything is stored: a path with a
    quote or a '<' once ran as script in the editor's page."""
    path = path.strip().strip("/")
    if problem := path_problem(path):
        raise StudioError(f"path: {problem}; nothing was saved")
    return path


def draft_skill_add(
    *, draft: Draft, name: str, kind: str, description: str, base_revision: int, actor: User
) -> SaveResult:
    """Add skills/<name>/SKILL.md to a draft from the Harness's skill template."""
    name = name.strip()
    try:
        text = new_skill_text(name=name, kind=kind, description=description)
    except TextEditError as error:
        raise StudioError(str(error)) from None
    path = f"skills/{name}/SKILL.md"
    if path in draft.files:
        raise StudioError(f"name: the skill {name} already exists in this draft")
    return draft_file_save(
        draft=draft, path=path, text=text, base_revision=base_revision, actor=actor
    )


def _form_yaml(text: str, *, field: str, example: str):
    """A form field's YAML, read by the Harness reader with a bundle file's bounds; JSON-like
    values."""
    data, _lines, problems = load_yaml(text, file=field)
    if problems:
        first = problems[0]
        reason = first.message.removeprefix("invalid YAML: ")
        what = (
            first.message if first.field == REFUSED else f"not YAML ({reason}, line {first.line})"
        )
        raise StudioError(f"{field}: {what}; e.g. {example}")
    try:
        json.dumps(data)
    except (TypeError, ValueError):
        raise StudioError(
            f"{field}: only text, numbers, true/false, lists and mappings "
            f"(quote a date or a !!tag); e.g. {example}"
        ) from None
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
    for form_field, problem in (
        ("id", id_problem(hook_id)),
        ("event", hook_event_problem(event)),
        ("on_fail", hook_action_problem(action)),
    ):
        if problem:
            raise StudioError(f"{form_field}: {problem}")
    params = (
        _form_yaml(params_text, field="params", example="{max_chars: 200}")
        if params_text.strip()
        else {}
    )
    if not isinstance(params, dict):
        raise StudioError("params: a mapping of parameter names to values, e.g. {max_chars: 200}")
    hook = {"id": hook_id, "event": event, "type": hook_type}
    if matcher.strip():
        hook["matcher"] = matcher.strip()
    if params:
        hook["params"] = params
    hook["on_fail"] = {
        "action": action,
        **({"message": message.strip()} if message.strip() else {}),
    }
    try:
        text = insert_hook(draft.files.get("hooks.yaml", ""), hook)
    except TextEditError as error:
        raise StudioError(str(error)) from None
    return draft_file_save(
        draft=draft, path="hooks.yaml", text=text, base_revision=base_revision, actor=actor
    )


def draft_file_delete(*, draft: Draft, path: str, base_revision: int, actor: User) -> Draft:
    """Remove a file (e.g. a skill) from a draft."""
    draft_check_writable(draft=draft, actor=actor)
    with transaction.atomic():
        current = Draft.objects.select_for_update().get(pk=draft.pk)
        if current.revision != base_revision:
            raise StudioError("the draft changed since you opened it; reload it and delete again")
        if path not in current.files:
            raise StudioError(f"path: {path} is not in this draft")
        files = {p: t for p, t in current.files.items() if p != path}
        current.files = files
        current.problems = problems_to_json(problems=bundle_problems(files))
        current.revision += 1
        current.updated_by = actor
        current.save()
    audit_record(
        actor=actor,
        action="draft.delete_file",
        harness=current.harness,
        target=f"draft #{current.pk} {path}",
        data={},
    )
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


def draft_conflict_keep_theirs(*, conflict: DraftConflict, actor: User) -> DraftConflict:
    """Settle a conflict by keeping the saved text: nothing is written to the draft."""
    if conflict.author_id != actor.pk and not user_can(actor, "harness.edit"):
        raise PermissionDenied("only the author of the unsaved text may resolve this conflict")
    conflict.resolved_at = timezone.now()
    conflict.save(update_fields=["resolved_at"])
    return conflict


@transaction.atomic
def draft_commit(
    *, draft: Draft, actor: User, message: str, authorised_as: str = ""
) -> HarnessVersion:
    """Turn a valid draft into a new version whose parent is the draft's base version.

    ``authorised_as``: see :func:`draft_check_writable`; it is kept in the audit record.
    """
    draft_check_writable(draft=draft, actor=actor, authorised_as=authorised_as)
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
            raise StudioError(
                "nothing to commit: the draft is identical to its base version"
            ) from None
        raise
    draft.status = Draft.COMMITTED
    draft.committed_version = version
    draft.save(update_fields=["status", "committed_version", "updated_at"])
    audit_record(
        actor=actor,
        action="draft.commit",
        harness=draft.harness,
        target=f"draft #{draft.pk} -> v{version.number}",
        data={
            "version": version.number,
            "message": version.message,
            **({"authorised_as": authorised_as} if authorised_as else {}),
        },
    )
    return version


def draft_discard(*, draft: Draft, actor: User) -> Draft:
    draft_check_writable(draft=draft, actor=actor)
    draft.status = Draft.DISCARDED
    draft.save(update_fields=["status", "updated_at"])
    audit_record(
        actor=actor,
        action="draft.discard",
        harness=draft.harness,
        target=f"draft #{draft.pk}",
        data={},
    )
    return draft
