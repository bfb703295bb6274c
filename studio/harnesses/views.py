"""Views for Harnesses, versions, labels, diffs, drafts and the editor.

Each view parses the request, checks one permission, calls a service or a
selector and renders a template. Errors a user can cause come back as
messages on the same page, never as a half-saved state.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from harness.hook_catalogue import HOOK_TYPES
from harness.tool_catalogue import BUILTIN_TOOLS
from studio.accounts.decorators import requires
from studio.accounts.roles import user_can
from studio.harnesses import selectors
from studio.harnesses.bundles import BundleArchiveError, files_to_zip
from studio.harnesses.diffs import ChangeSet, files_diff, version_diff, version_summary
from studio.harnesses.markdown import render_skill_preview
from studio.harnesses.models import Draft, DraftConflict, Harness, HarnessVersion, Label
from studio.harnesses.services import (
    DuplicateVersion,
    InvalidBundle,
    StudioError,
    draft_commit,
    draft_conflict_resolve,
    draft_create,
    draft_discard,
    draft_file_delete,
    draft_file_save,
    draft_skill_add,
    harness_import_zip,
    label_move,
    label_rollback,
)

FILE_ORDER = ("manifest.yaml", "prompt.yaml", "tools.yaml", "hooks.yaml")


def _int(value: str | None, *, field: str) -> int:
    try:
        return int(value or "")
    except ValueError:
        raise StudioError(f"{field}: expected a whole number, got {value!r}") from None


def _file_sort_key(path: str) -> tuple:
    return (FILE_ORDER.index(path) if path in FILE_ORDER else len(FILE_ORDER), path)


def _file_kind(path: str) -> str:
    if path.endswith("SKILL.md"):
        return "skill"
    return {"tools.yaml": "tools", "hooks.yaml": "hooks", "prompt.yaml": "prompt", "manifest.yaml": "manifest"}.get(
        path, "other"
    )


def _harness(name: str) -> Harness:
    return get_object_or_404(Harness, name=name)


def _version(harness: Harness, number: int) -> HarnessVersion:
    try:
        return selectors.version_get(harness=harness, number=number)
    except HarnessVersion.DoesNotExist:
        raise Http404(f"{harness.name} has no version {number}") from None


# --- Harnesses and versions -----------------------------------------------------


@require_GET
@requires("studio.view")
def home(request):
    return render(request, "harnesses/home.html", {"harnesses": selectors.harness_list()})


@require_GET
@requires("studio.view")
def harness_detail(request, name: str):
    harness = _harness(name)
    return render(
        request,
        "harnesses/harness_detail.html",
        {
            "harness": harness,
            "versions": selectors.version_list(harness=harness)[:200],
            "labels": harness.labels.select_related("version", "updated_by"),
            "drafts": selectors.draft_list(harness=harness),
            "moves": selectors.label_history(harness=harness, limit=20),
        },
    )


@require_GET
@requires("studio.view")
def harness_history(request, name: str):
    from studio.audit.selectors import audit_event_list

    harness = _harness(name)
    return render(
        request,
        "harnesses/harness_history.html",
        {
            "harness": harness,
            "moves": selectors.label_history(harness=harness, limit=500),
            "events": audit_event_list(harness=harness, limit=500),
        },
    )


@require_http_methods(["GET", "POST"])
@requires("harness.edit")
def harness_import(request):
    if request.method == "POST":
        upload = request.FILES.get("bundle")
        message = request.POST.get("message", "").strip() or "Imported from a .zip"
        if upload is None:
            messages.error(request, "bundle: choose a .zip of a Harness directory")
        elif upload.size > settings.MAX_IMPORT_BYTES:
            messages.error(request, f"bundle: the file is larger than {settings.MAX_IMPORT_BYTES} bytes")
        else:
            try:
                result = harness_import_zip(
                    data=upload.read(), author=request.user, message=message, max_bytes=settings.MAX_IMPORT_BYTES
                )
            except InvalidBundle as error:
                return render(request, "harnesses/import.html", {"problems": error.problems}, status=400)
            except (BundleArchiveError, StudioError) as error:
                messages.error(request, str(error))
            else:
                if result.created:
                    messages.success(request, f"Imported {result.version}.")
                else:
                    messages.info(request, f"Nothing new: these files are {result.version}.")
                return redirect("harnesses:version_detail", name=result.harness.name, number=result.version.number)
        return render(request, "harnesses/import.html", {}, status=400)
    return render(request, "harnesses/import.html", {})


@require_GET
@requires("studio.view")
def version_detail(request, name: str, number: int):
    harness = _harness(name)
    version = _version(harness, number)
    paths = sorted(version.tree, key=_file_sort_key)
    path = request.GET.get("path") or paths[0]
    if path not in version.tree:
        raise Http404(f"v{number} has no file {path}")
    text = selectors.version_files(version=version, paths=[path])[path]
    return render(
        request,
        "harnesses/version_detail.html",
        {
            "harness": harness,
            "version": version,
            "paths": paths,
            "path": path,
            "text": text,
            "kind": _file_kind(path),
            "preview": render_skill_preview(text) if path.endswith(".md") else None,
            "labels": version.labels.all(),
            "other_labels": harness.labels.exclude(version=version),
        },
    )


@require_GET
@requires("studio.view")
def version_export(request, name: str, number: int):
    harness = _harness(name)
    version = _version(harness, number)
    data = files_to_zip(selectors.version_files(version=version), folder=harness.name)
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{harness.name}-v{version.number}.zip"'
    return response


@require_GET
@requires("studio.view")
def version_diff_view(request, name: str):
    harness = _harness(name)
    latest = selectors.harness_latest_version(harness=harness)
    if latest is None:
        raise Http404("this Harness has no versions")
    try:
        new_number = _int(request.GET.get("b") or str(latest.number), field="b")
        new = _version(harness, new_number)
        default_old = new.parent.number if new.parent else new.number
        old = _version(harness, _int(request.GET.get("a") or str(default_old), field="a"))
    except StudioError as error:
        return HttpResponseBadRequest(str(error))
    mode = "split" if request.GET.get("mode") == "split" else "unified"
    numbers = list(harness.versions.order_by("-number").values_list("number", flat=True)[:500])
    return render(
        request,
        "harnesses/version_diff.html",
        {"harness": harness, "old": old, "new": new, "changes": version_diff(old=old, new=new), "mode": mode, "numbers": numbers},
    )


@require_GET
@requires("studio.view")
def version_diff_summary(request, name: str):
    """The change-summary box of the diff page, computed on demand (htmx)."""
    harness = _harness(name)
    try:
        old = _version(harness, _int(request.GET.get("a"), field="a"))
        new = _version(harness, _int(request.GET.get("b"), field="b"))
    except StudioError as error:
        return HttpResponseBadRequest(str(error))
    changes = ChangeSet(files=[], summary=version_summary(old=old, new=new))
    return render(request, "harnesses/_change_summary.html", {"changes": changes})


@require_POST
@requires("label.move")
def label_move_view(request, name: str):
    harness = _harness(name)
    try:
        version = _version(harness, _int(request.POST.get("version"), field="version"))
        label_move(
            harness=harness,
            name=request.POST.get("label", ""),
            version=version,
            actor=request.user,
            reason=request.POST.get("reason", ""),
        )
    except StudioError as error:
        messages.error(request, str(error))
    except PermissionDenied as error:
        messages.error(request, str(error))
        return redirect("harnesses:harness_detail", name=harness.name)
    else:
        messages.success(request, f"{request.POST.get('label')} now points at v{version.number}.")
    return redirect(request.POST.get("next") or reverse("harnesses:harness_detail", args=[harness.name]))


@require_POST
@requires("label.move")
def label_rollback_view(request, name: str, label: str):
    harness = _harness(name)
    target = get_object_or_404(Label, harness=harness, name=label)
    try:
        moved = label_rollback(label=target, actor=request.user, reason=request.POST.get("reason", ""))
    except (StudioError, PermissionDenied) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"{moved.name} rolled back to v{moved.version.number}.")
    return redirect("harnesses:harness_detail", name=harness.name)


# --- drafts and the editor ------------------------------------------------------


def _draft(request, draft_id: int, *, for_write: bool = False) -> Draft:
    draft = get_object_or_404(Draft.objects.select_related("harness", "base_version", "owner"), pk=draft_id)
    if for_write and draft.owner_id != request.user.pk and not user_can(request.user, "harness.edit"):
        raise PermissionDenied("only the draft's owner may change it")
    return draft


@require_POST
@requires("harness.edit")
def draft_create_view(request, name: str):
    harness = _harness(name)
    try:
        base = _version(harness, _int(request.POST.get("base"), field="base"))
        draft = draft_create(harness=harness, base_version=base, owner=request.user, title=request.POST.get("title", ""))
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
        {"mine": selectors.draft_list(owner=request.user), "others": selectors.draft_list().exclude(owner=request.user)},
    )


def _line_annotations(text: str, problems: list[dict]) -> list[dict]:
    """Each line of `text` with the problems reported at it (line 0 problems go on line 1)."""
    by_line: dict[int, list[dict]] = {}
    for problem in problems:
        by_line.setdefault(max(1, problem["line"]), []).append(problem)
    lines = text.split("\n")
    rows = [{"no": i, "text": line, "problems": by_line.get(i, [])} for i, line in enumerate(lines, start=1)]
    beyond = [p for n, ps in by_line.items() if n > len(lines) for p in ps]
    if beyond and rows:
        rows[-1]["problems"] = rows[-1]["problems"] + beyond
    return rows


def _editor_context(draft: Draft, path: str, *, text: str | None = None) -> dict:
    paths = sorted(draft.files, key=_file_sort_key)
    problems_by_file: dict[str, int] = {}
    for problem in draft.problems:
        problems_by_file[problem["file"]] = problems_by_file.get(problem["file"], 0) + 1
    text = draft.files.get(path, "") if text is None else text
    file_problems = [p for p in draft.problems if p["file"] == path]
    kind = _file_kind(path)
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
        "builtin_tools": BUILTIN_TOOLS.values() if kind == "tools" else None,
        "conflicts": selectors.draft_open_conflicts(draft=draft),
    }


@require_GET
@requires("studio.view")
def draft_edit(request, draft_id: int):
    draft = _draft(request, draft_id)
    path = request.GET.get("path") or sorted(draft.files, key=_file_sort_key)[0]
    if path not in draft.files:
        raise Http404(f"draft #{draft.pk} has no file {path}")
    context = _editor_context(draft, path)
    context["can_write"] = draft.status == Draft.OPEN and (
        draft.owner_id == request.user.pk or user_can(request.user, "harness.edit")
    )
    return render(request, "harnesses/draft_edit.html", context)


@require_POST
@requires("harness.edit")
def draft_save(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    path = request.POST.get("path", "")
    try:
        revision = _int(request.POST.get("revision"), field="revision")
        result = draft_file_save(
            draft=draft, path=path, text=request.POST.get("text", ""), base_revision=revision, actor=request.user
        )
    except StudioError as error:
        messages.error(request, str(error))
        return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={path}")
    if result.conflict is not None:
        return redirect("harnesses:conflict_detail", conflict_id=result.conflict.pk)
    file_problems = [p for p in result.problems if p["file"] == path]
    if result.problems:
        messages.warning(
            request,
            f"Saved {path} (revision {result.draft.revision}) with {len(result.problems)} validation problem(s)"
            f"{f', {len(file_problems)} in this file' if file_problems else ''}; fix them before committing.",
        )
    else:
        messages.success(request, f"Saved {path} (revision {result.draft.revision}). The draft is valid.")
    return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={path}")


@require_POST
@requires("studio.view")
def draft_preview(request, draft_id: int):
    _draft(request, draft_id)
    preview = render_skill_preview(request.POST.get("text", ""))
    return render(request, "harnesses/_skill_preview.html", {"preview": preview})


@require_POST
@requires("harness.edit")
def draft_skill_add_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    try:
        result = draft_skill_add(
            draft=draft,
            name=request.POST.get("name", ""),
            kind=request.POST.get("kind", ""),
            description=request.POST.get("description", ""),
            base_revision=_int(request.POST.get("revision"), field="revision"),
            actor=request.user,
        )
    except StudioError as error:
        messages.error(request, str(error))
        return redirect("harnesses:draft_edit", draft_id=draft.pk)
    if result.conflict is not None:
        return redirect("harnesses:conflict_detail", conflict_id=result.conflict.pk)
    path = f"skills/{request.POST.get('name', '').strip()}/SKILL.md"
    messages.success(request, f"Added {path}.")
    return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={path}")


@require_POST
@requires("harness.edit")
def draft_file_delete_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    path = request.POST.get("path", "")
    try:
        draft_file_delete(
            draft=draft, path=path, base_revision=_int(request.POST.get("revision"), field="revision"), actor=request.user
        )
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
    return render(request, "harnesses/draft_changes.html", {"draft": draft, "harness": draft.harness, "changes": changes, "mode": mode})


@require_POST
@requires("harness.edit")
def draft_commit_view(request, draft_id: int):
    draft = _draft(request, draft_id, for_write=True)
    try:
        version = draft_commit(draft=draft, actor=request.user, message=request.POST.get("message", ""))
    except InvalidBundle as error:
        messages.error(request, f"Cannot commit: {len(error.problems)} validation problem(s). First: {error.problems[0]}")
        return redirect("harnesses:draft_changes", draft_id=draft.pk)
    except DuplicateVersion as error:
        messages.error(request, f"Cannot commit: {error}")
        return redirect("harnesses:draft_changes", draft_id=draft.pk)
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
    conflict = get_object_or_404(DraftConflict.objects.select_related("draft", "draft__harness", "author"), pk=conflict_id)
    draft = conflict.draft
    if conflict.author_id != request.user.pk and not user_can(request.user, "harness.edit"):
        raise PermissionDenied("this conflict belongs to someone else")
    if request.method == "POST" and conflict.resolved_at is None:
        choice = request.POST.get("choice", "merged")
        text = {"mine": conflict.my_text, "theirs": None}.get(choice, request.POST.get("text", ""))
        if text is None:  # keep theirs: nothing to save, the conflict is settled
            from django.utils import timezone

            conflict.resolved_at = timezone.now()
            conflict.save(update_fields=["resolved_at"])
            messages.info(request, f"Kept the saved version of {conflict.path}; your text stays on this page's record.")
            return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={conflict.path}")
        try:
            result = draft_conflict_resolve(conflict=conflict, text=text, actor=request.user)
        except StudioError as error:
            messages.error(request, str(error))
        else:
            if result.conflict is not None:
                messages.warning(request, "The draft changed again while you were resolving; here is the new conflict.")
                return redirect("harnesses:conflict_detail", conflict_id=result.conflict.pk)
            messages.success(request, f"Saved {conflict.path} (revision {result.draft.revision}).")
            return redirect(f"{reverse('harnesses:draft_edit', args=[draft.pk])}?path={conflict.path}")
    current_text = Draft.objects.get(pk=draft.pk).files.get(conflict.path, "")
    changes = files_diff(old_files={conflict.path: current_text}, new_files={conflict.path: conflict.my_text})
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
    )

