"""Views for drafts and the editor: edit files, validate inline, resolve conflicts, commit.

Each view parses the request, checks one permission, calls a service and
renders. Saving never loses text: an invalid draft is saved with its problems,
and a save that lost a race becomes a conflict the author resolves.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from harness.hook_catalogue import EVENTS as HOOK_EVENTS
from harness.hook_catalogue import HOOK_TYPES
from harness.skills import (
    MAX_SKILL_FILE_BYTES,
    MAX_SKILL_FILES,
    SKILL_FILE_SUFFIXES,
    SKILL_KIND_MEANINGS,
)
from harness.tool_catalogue import BUILTIN_TOOLS
from studio.accounts.decorators import requires
from studio.accounts.roles import user_can
from studio.forms import form_problem, valid_data
from studio.harnesses import selectors
from studio.harnesses.bundles import MAX_FILE_BYTES, bundle_load
from studio.harnesses.diffs import files_diff
from studio.harnesses.forms import (
    ConflictResolveForm,
    DraftCommitForm,
    DraftCreateForm,
    ExistingVersionForm,
    FileDeleteForm,
    FileSaveForm,
    HookAddForm,
    SkillAddForm,
    SkillImportForm,
    SkillPreviewForm,
)
from studio.harnesses.lookups import (
    file_kind,
    file_sort_key,
    harness_or_404,
    version_or_404,
)
from studio.harnesses.markdown import render_skill_preview
from studio.harnesses.models import Draft
from studio.harnesses.services import (
    DuplicateVersion,
    InvalidBundle,
    StudioError,
    draft_commit,
    draft_conflict_keep_theirs,
    draft_conflict_resolve,
    draft_create,
    draft_discard,
    draft_file_delete,
    draft_file_save,
    draft_hook_add,
    draft_skill_add,
)
from studio.harnesses.skill_import import draft_skill_import
from studio.lookups import found_or_404


def _draft(request, draft_id: int, *, for_write: bool = False) -> Draft:
    draft = found_or_404(selectors.draft_get, f"no draft #{draft_id}", draft_id=draft_id)
    if (
        for_write
        and draft.owner_id != request.user.pk
        and not user_can(request.user, "harness.edit")
    ):
        raise PermissionDenied("only the draft's owner may change it")
    return draft


@require_POST
@requires("harness.edit")
def draft_create_view(request, name: str):
    harness = harness_or_404(name)
    try:
        typed = valid_data(DraftCreateForm(request.POST), error=StudioError)
        base = version_or_404(harness, typed["base"])
        draft = draft_create(
            harness=harness, base_version=base, owner=request.user, title=typed["title"]
        )
    except StudioError as error:
        messages.error(request, str(error))
        return redirect("harnesses:harness_detail", name=harness.name)
    return redirect("harnesses:draft_edit", draft_id=draft.pk)


@require_GET
@requires("studio.view")
def draft_list_view(request):
    return render(
        request,
        "harnesses/draft_list.html",
        {
            "mine": selectors.draft_list(owner=request.user),
            "others": selectors.draft_list().exclude(owner=request.user),
        },
    )


def _line_annotations(text: str, problems: list[dict]) -> list[dict]:
    """Each line of `text` with the problems reported at it (line 0 problems go on line 1)."""
    by_line: dict[int, list[dict]] = {}
    for problem in problems:
        by_line.setdefault(max(1, problem["line"]), []).append(problem)
    lines = text.split("\n")
    rows = [
        {"no": i, "text": line, "problems": by_line.get(i, [])}
        for i, line in enumerate(lines, start=1)
    ]
    beyond = [p for n, ps in by_line.items() if n > len(lines) for p in ps]
    if beyond and rows:
        rows[-1]["problems"] = rows[-1]["problems"] + beyond
    return rows


def _editor_context(draft: Draft, path: str, *, text: str | None = None) -> dict:
    paths = sorted(draft.files, key=file_sort_key)
    problems_by_file: dict[str, int] = {}
    for problem in draft.problems:
        problems_by_file[problem["file"]] = problems_by_file.get(problem["file"], 0) + 1
    text = draft.files.get(path, "") if text is None else text
    file_problems = [p for p in draft.problems if p["file"] == path]
    kind = file_kind(path)
    return {
        "draft": draft,
        "harness": draft.harness,
        "paths": paths,
        "path": path,
        "text": text,
        "kind": kind,
        "changed": selectors.draft_changed_paths(draft=draft),
        "problems_by_file": problems_by_file,
        "file_problems": file_problems,
        "other_problems": [p for p in draft.problems if p["file"] != path],
        "annotated": _line_annotations(text, file_problems) if file_problems else [],
        "problem_lines": json.dumps(sorted({max(1, p["line"]) for p in file_problems})),
        "preview": render_skill_preview(text) if kind == "skill" else None,
        "hook_types": HOOK_TYPES.values() if kind == "hooks" else None,
        "hook_events": HOOK_EVENTS if kind == "hooks" else None,
        "builtin_tools": BUILTIN_TOOLS.values() if kind == "tools" else None,
        "conflicts": selectors.draft_open_conflicts(draft=draft),
        "prompt_sharing": _prompt_sharing(draft) if kind == "prompt" else None,
    }


def _prompt_sharing(draft: Draft):
    """How much of the draft's system prompt every request shares (harness.prompt_sharing), for the
    prompt.yaml editor; None while the draft does not load (its problems are shown instead)."""
    from harness.prompt_sharing import prompt_sharing

    if draft.problems:
        return None
    try:
        return prompt_sharing(bundle_load(draft.files))
    except ValueError:
        return None


def _can_write(request, draft: Draft) -> bool:
    return draft.status == Draft.OPEN and (
        draft.owner_id == request.user.pk or user_can(request.user, "harness.edit")
    )


@require_GET
@requires("studio.view")
def draft_edit(request, draft_id: int):
    draft = _draft(request, draft_id)
    path = request.GET.get("path") or sorted(draft.files, key=file_sort_key)[0]
    if path not in draft.files:
        raise Http404(f"draft #{draft.pk} has no file {path}")
    context = _editor_context(draft, path)
    context["can_write"] = _can_write(request, draft)
    return render(request, "harnesses/draft_edit.html", context)


def _refused(request, draft: Draft, error: StudioError, *, path: str, text: str | None = None):
    """The editor again with the error, answered 400: nothing was saved, and the text the
    user sent stays in the editor (unless it is over the size limit, or for a new file)."""
    messages.error(request, str(error))
    draft = selectors.draft_get(draft_id=draft.pk)  # as saved: the refused change is not in it
    if path not in draft.files:
        path, text = sorted(draft.files, key=file_sort_key)[0], None
    keep = text is not None and len(text) <= MAX_FILE_BYTES
    context = _editor_context(draft, path, text=text if keep else None)
    context["can_write"] = _can_write(request, draft)
    return render(request, "harnesses/draft_edit.html", context, status=400)


@require_POST
@requires("harness.edit")
def draft_save(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    form = FileSaveForm(request.POST)
    form.is_valid()
    path, text = form.cleaned_data.get("path", ""), form.cleaned_data.get("text", "")
    try:
        revision = valid_data(form, error=StudioError)["revision"]
        result = draft_file_save(
            draft=draft, path=path, text=text, base_revision=revision, actor=request.user
        )
    except StudioError as error:
        return _refused(request, draft, error, path=path, text=text)
    if result.conflict is not None:
        return redirect("harnesses:conflict_detail", conflict_id=result.conflict.pk)
    file_problems = [p for p in result.problems if p["file"] == path]
    if result.problems:
        messages.warning(
            request,
            f"Saved {path} (revision {result.draft.revision}) "
            f"with {len(result.problems)} validation problem(s)"
            f"{f', {len(file_problems)} in this file' if file_problems else ''}; "
            "fix them before committing.",
        )
    else:
        messages.success(
            request, f"Saved {path} (revision {result.draft.revision}). The draft is valid."
        )
    return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={path}")


@require_POST
@requires("studio.view")
def draft_preview(request, draft_id: int):
    _draft(request, draft_id)
    form = SkillPreviewForm(request.POST)
    preview = (
        render_skill_preview(form.cleaned_data["text"])
        if form.is_valid()
        else {"front": None, "html": "", "refused": form_problem(form)}
    )
    # a refusal is a 400 (the editor's htmx swaps it in all the same, so the reason shows)
    return render(
        request,
        "harnesses/_skill_preview.html",
        {"preview": preview},
        status=400 if preview["refused"] else 200,
    )


@require_POST
@requires("harness.edit")
def draft_skill_add_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    try:
        typed = valid_data(SkillAddForm(request.POST), error=StudioError)
        result = draft_skill_add(
            draft=draft,
            name=typed["name"],
            kind=typed["kind"],
            description=typed["description"],
            base_revision=typed["revision"],
            actor=request.user,
        )
    except StudioError as error:
        return _refused(request, draft, error, path="")
    if result.conflict is not None:
        return redirect("harnesses:conflict_detail", conflict_id=result.conflict.pk)
    path = f"skills/{typed['name'].strip()}/SKILL.md"
    messages.success(request, f"Added {path}.")
    return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={path}")


@require_http_methods(["GET", "POST"])
@requires("harness.edit")
def draft_skill_import_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    context = {
        "draft": draft,
        "harness": draft.harness,
        "kinds": SKILL_KIND_MEANINGS.items(),
        "suffixes": " ".join(SKILL_FILE_SUFFIXES),
        "max_files": MAX_SKILL_FILES,
        "max_file_kib": MAX_SKILL_FILE_BYTES // 1024,
    }
    if request.method == "GET":
        return render(request, "harnesses/draft_skill_import.html", context)
    form = SkillImportForm(request.POST, request.FILES)
    form.is_valid()
    kind = form.cleaned_data.get("kind") or None
    context["chosen_kind"] = kind or ""
    if form.errors:
        context["error"] = form_problem(form)
    else:
        try:
            result = draft_skill_import(
                draft=draft,
                data=form.cleaned_data["skill"].read(),
                kind=kind,
                base_revision=form.cleaned_data["revision"],
                actor=request.user,
                max_bytes=settings.MAX_IMPORT_BYTES,
            )
        except InvalidBundle as error:
            context["problems"] = error.problems
            context["ask_kind"] = any(p.field == "kind" for p in error.problems)
        except StudioError as error:
            context["error"] = str(error)
        else:
            skill = result.skill
            path = f"skills/{skill.name}/SKILL.md"
            note = (
                f" The agent reads its files with {skill.file_hint()}." if skill.file_hint() else ""
            )
            note += f" {skill.tools_note()}." if skill.tools_note() else ""
            messages.success(
                request, f"Imported {skill.name} ({skill.kind}), {len(skill.files)} files.{note}"
            )
            return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={path}")
    return render(request, "harnesses/draft_skill_import.html", context, status=400)


@require_POST
@requires("harness.edit")
def draft_hook_add_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    url = f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path=hooks.yaml"
    try:
        hook = valid_data(HookAddForm(request.POST), error=StudioError)
        result = draft_hook_add(
            draft=draft,
            hook_id=hook["id"],
            event=hook["event"],
            hook_type=hook["type"],
            matcher=hook["matcher"],
            params_text=hook["params"],
            action=hook["action"],
            message=hook["message"],
            base_revision=hook["revision"],
            actor=request.user,
        )
    except StudioError as error:
        return _refused(request, draft, error, path="hooks.yaml")
    if result.conflict is not None:
        return redirect("harnesses:conflict_detail", conflict_id=result.conflict.pk)
    problems = [p for p in result.problems if p["file"] == "hooks.yaml"]
    if problems:
        messages.warning(
            request,
            f"Added hook {hook['id']}; hooks.yaml now has {len(problems)} problem(s), shown below.",
        )
    else:
        messages.success(request, f"Added hook {hook['id']} to hooks.yaml.")
    return redirect(url)


@require_POST
@requires("harness.edit")
def draft_file_delete_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    form = FileDeleteForm(request.POST)
    form.is_valid()
    path = form.cleaned_data.get("path", "")
    try:
        revision = valid_data(form, error=StudioError)["revision"]
        draft_file_delete(draft=draft, path=path, base_revision=revision, actor=request.user)
    except StudioError as error:
        messages.error(request, str(error))
        return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={path}")
    messages.success(request, f"Removed {path} from the draft.")
    return redirect("harnesses:draft_edit", draft_id=draft.pk)


@require_GET
@requires("studio.view")
def draft_changes(request, draft_id: int):
    draft = _draft(request, draft_id)
    base_files = selectors.version_files(version=draft.base_version)
    changes = files_diff(old_files=base_files, new_files=draft.files)
    mode = "split" if request.GET.get("mode") == "split" else "unified"
    found = ExistingVersionForm(request.GET)
    number = found.cleaned_data.get("existing") if found.is_valid() else None
    existing = None
    if number and number != draft.base_version.number:
        existing = selectors.version_list(harness=draft.harness).filter(number=number).first()
    return render(
        request,
        "harnesses/draft_changes.html",
        {
            "draft": draft,
            "harness": draft.harness,
            "changes": changes,
            "mode": mode,
            "existing": existing,
        },
    )


@require_POST
@requires("harness.edit")
def draft_commit_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    try:
        message = valid_data(DraftCommitForm(request.POST), error=StudioError)["message"]
        version = draft_commit(draft=draft, actor=request.user, message=message)
    except InvalidBundle as error:
        messages.error(
            request,
            f"Cannot commit: {len(error.problems)} validation "
            f"problem(s). First: {error.problems[0]}",
        )
        return redirect("harnesses:draft_changes", draft_id=draft.pk)
    except DuplicateVersion as error:  # not a dead end: the changes page offers that version
        messages.info(request, f"Nothing new to commit: {error}.")
        url = reverse("harnesses:draft_changes", args=[draft.pk])
        return redirect(f"{url}?existing={error.version.number}#existing-version")
    except StudioError as error:
        messages.error(request, f"Cannot commit: {error}")
        return redirect("harnesses:draft_changes", draft_id=draft.pk)
    messages.success(request, f"Committed {version}.")
    url = reverse("harnesses:version_diff", args=[version.harness.name])
    return redirect(f"{url}?a={draft.base_version.number}&b={version.number}")


@require_POST
@requires("harness.edit")
def draft_discard_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    try:
        draft_discard(draft=draft, actor=request.user)
    except StudioError as error:
        messages.error(request, str(error))
    else:
        messages.info(request, f"Discarded draft #{draft.pk}.")
    return redirect("harnesses:harness_detail", name=draft.harness.name)


@require_http_methods(["GET", "POST"])
@requires("harness.edit")
def conflict_detail(request, conflict_id: int):
    conflict = found_or_404(
        selectors.conflict_get, f"no conflict #{conflict_id}", conflict_id=conflict_id
    )
    draft = conflict.draft
    if conflict.author_id != request.user.pk and not user_can(request.user, "harness.edit"):
        raise PermissionDenied("this conflict belongs to someone else")
    status = 200
    form = ConflictResolveForm(request.POST if request.method == "POST" else None)
    if form.is_bound and conflict.resolved_at is None and not form.is_valid():
        messages.error(request, form_problem(form))
        status = 400
    elif form.is_bound and conflict.resolved_at is None:
        typed = form.cleaned_data
        text = {"mine": conflict.my_text, "theirs": None}.get(typed["choice"], typed["text"])
        if text is None:  # keep theirs: nothing to save, the conflict is settled
            draft_conflict_keep_theirs(conflict=conflict, actor=request.user)
            messages.info(
                request,
                f"Kept the saved version of {conflict.path}; "
                "your text stays on this page's record.",
            )
            return redirect(
                f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={conflict.path}"
            )
        try:
            result = draft_conflict_resolve(conflict=conflict, text=text, actor=request.user)
        except StudioError as error:
            messages.error(request, str(error))
            status = 400
        else:
            if result.conflict is not None:
                messages.warning(
                    request,
                    "The draft changed again while you were resolving; here is the new conflict.",
                )
                return redirect("harnesses:conflict_detail", conflict_id=result.conflict.pk)
            messages.success(request, f"Saved {conflict.path} (revision {result.draft.revision}).")
            return redirect(
                f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={conflict.path}"
            )
    current_text = selectors.draft_file_text(draft_id=draft.pk, path=conflict.path)
    changes = files_diff(
        old_files={conflict.path: current_text}, new_files={conflict.path: conflict.my_text}
    )
    return render(
        request,
        "harnesses/conflict.html",
        {
            "conflict": conflict,
            "draft": draft,
            "harness": draft.harness,
            "their_text": current_text,
            "changes": changes,
            "identical": current_text == conflict.my_text,
        },
        status=status,
    )
