"""Views for Harnesses, versions, labels, diffs, drafts and the editor.

Each view parses the request, checks one permission, calls a service or a
selector and renders a template. Errors a user can cause come back as
messages on the same page, never as a half-saved state.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from studio.accounts.decorators import requires
from studio.audit.selectors import gate_overrides
from studio.forms import ReasonForm, form_problems, valid_data
from studio.gates import version_release_gates
from studio.harnesses import selectors
from studio.harnesses.bundles import BundleArchiveError, files_to_zip
from studio.harnesses.diffs import ChangeSet, version_diff, version_summary
from studio.harnesses.forms import BundleImportForm, LabelMoveForm
from studio.harnesses.lookups import (
    file_kind,
    file_sort_key,
    harness_or_404,
    parse_int,
    version_or_404,
)
from studio.harnesses.markdown import render_skill_preview
from studio.harnesses.models import Label
from studio.harnesses.services import (
    InvalidBundle,
    StudioError,
    harness_import_zip,
    label_move,
    label_rollback,
)
from studio.lookups import found_or_404
from studio.promotion import production_promote
from studio.redirects import redirect_to_next

VERSIONS_PER_PAGE = 50


# --- Harnesses and versions -----------------------------------------------------


@require_GET
@requires("studio.view")
def home(request):
    return render(request, "harnesses/home.html", {"harnesses": selectors.harness_list()})


@require_GET
@requires("studio.view")
def harness_detail(request, name: str):
    harness = harness_or_404(name)
    versions = Paginator(selectors.version_list(harness=harness), VERSIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "harnesses/harness_detail.html",
        {
            "harness": harness,
            "versions": versions,
            "labels": selectors.label_list(harness=harness),
            "drafts": selectors.draft_list(harness=harness),
            "moves": selectors.label_history(harness=harness, limit=20),
        },
    )


@require_GET
@requires("studio.view")
def harness_history(request, name: str):
    from studio.audit.selectors import audit_event_list

    harness = harness_or_404(name)
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
        form = BundleImportForm(request.POST, request.FILES)
        if not form.is_valid():
            for problem in form_problems(form):
                messages.error(request, problem)
        else:
            try:
                result = harness_import_zip(
                    data=form.cleaned_data["bundle"].read(),
                    author=request.user,
                    message=form.cleaned_data["message"],
                    max_bytes=settings.MAX_IMPORT_BYTES,
                )
            except InvalidBundle as error:
                return render(
                    request, "harnesses/import.html", {"problems": error.problems}, status=400
                )
            except (BundleArchiveError, StudioError) as error:
                messages.error(request, str(error))
            else:
                if result.created:
                    messages.success(request, f"Imported {result.version}.")
                else:
                    messages.info(request, f"Nothing new: these files are {result.version}.")
                return redirect(
                    "harnesses:version_detail",
                    name=result.harness.name,
                    number=result.version.number,
                )
        return render(request, "harnesses/import.html", {}, status=400)
    return render(request, "harnesses/import.html", {})


@require_GET
@requires("studio.view")
def version_detail(request, name: str, number: int):
    harness = harness_or_404(name)
    version = version_or_404(harness, number)
    paths = sorted(version.tree, key=file_sort_key)
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
            "kind": file_kind(path),
            "preview": render_skill_preview(text) if path.endswith(".md") else None,
            "labels": version.labels.all(),
            "other_labels": harness.labels.exclude(version=version),
            "gates": version_release_gates(version=version),
            "gate_overrides": gate_overrides(version=version),
        },
    )


@require_GET
@requires("studio.view")
def version_export(request, name: str, number: int):
    harness = harness_or_404(name)
    version = version_or_404(harness, number)
    data = files_to_zip(selectors.version_files(version=version), folder=harness.name)
    response = HttpResponse(data, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{harness.name}-v{version.number}.zip"'
    return response


@require_GET
@requires("studio.view")
def version_diff_view(request, name: str):
    harness = harness_or_404(name)
    latest = selectors.harness_latest_version(harness=harness)
    if latest is None:
        raise Http404("this Harness has no versions")
    try:
        new_number = parse_int(request.GET.get("b") or str(latest.number), field="b")
        new = version_or_404(harness, new_number)
        default_old = new.parent.number if new.parent else new.number
        old = version_or_404(
            harness, parse_int(request.GET.get("a") or str(default_old), field="a")
        )
    except StudioError as error:
        return HttpResponseBadRequest(str(error))
    mode = "split" if request.GET.get("mode") == "split" else "unified"
    numbers = list(harness.versions.order_by("-number").values_list("number", flat=True)[:500])
    return render(
        request,
        "harnesses/version_diff.html",
        {
            "harness": harness,
            "old": old,
            "new": new,
            "changes": version_diff(old=old, new=new),
            "mode": mode,
            "numbers": numbers,
        },
    )


@require_GET
@requires("studio.view")
def version_diff_summary(request, name: str):
    """The change-summary box of the diff page, computed on demand (htmx)."""
    harness = harness_or_404(name)
    try:
        old = version_or_404(harness, parse_int(request.GET.get("a"), field="a"))
        new = version_or_404(harness, parse_int(request.GET.get("b"), field="b"))
    except StudioError as error:
        return HttpResponseBadRequest(str(error))
    changes = ChangeSet(files=[], summary=version_summary(old=old, new=new))
    return render(request, "harnesses/_change_summary.html", {"changes": changes})


@require_POST
@requires("label.move")
def label_move_view(request, name: str):
    harness = harness_or_404(name)
    try:
        move = valid_data(LabelMoveForm(request.POST), error=StudioError)
        name = move["label"]
        version = version_or_404(harness, move["version"])
        if name == Label.PRODUCTION:  # through the release gates (studio.promotion)
            production_promote(
                harness=harness,
                version=version,
                actor=request.user,
                reason=move["reason"],
                override_reason=move["override_reason"],
            )
        else:
            label_move(
                harness=harness,
                name=name,
                version=version,
                actor=request.user,
                reason=move["reason"],
            )
    except StudioError as error:
        messages.error(request, str(error))
    except PermissionDenied as error:
        messages.error(request, str(error))
        return redirect("harnesses:harness_detail", name=harness.name)
    else:
        messages.success(request, f"{name} now points at v{version.number}.")
    return redirect_to_next(
        request, fallback=reverse("harnesses:harness_detail", args=[harness.name])
    )


@require_POST
@requires("label.move")
def label_rollback_view(request, name: str, label: str):
    harness = harness_or_404(name)
    target = found_or_404(
        selectors.label_get, f"{harness.name} has no label {label!r}", harness=harness, name=label
    )
    try:
        moved = label_rollback(
            label=target,
            actor=request.user,
            reason=valid_data(ReasonForm(request.POST), error=StudioError)["reason"],
        )
    except (StudioError, PermissionDenied) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"{moved.name} rolled back to v{moved.version.number}.")
    return redirect("harnesses:harness_detail", name=harness.name)
