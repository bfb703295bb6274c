"""Pages of releases: the list, drafting one (gates shown before saving), a release's page with its
gates, manifest and the reviewer's decision, and the manifest download.

Views parse, authorise, call a service or selector, render. A form that does not validate comes
back with status 400, every wrong field named, and nothing saved.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from serving.release import ReleaseManifestError, manifest_text
from studio.accounts.decorators import requires
from studio.forms import DecisionForm, field_problems
from studio.lookups import found_or_404
from studio.releases import selectors
from studio.releases.forms import ReleaseForm
from studio.releases.models import Release
from studio.releases.services import (
    ReleaseRefused,
    release_check,
    release_decide,
    release_draft,
    release_refresh_gates,
)

FIELDS = ("checkpoint", "draft_head", "harness_version", "notes")


def _release_or_404(release_id: int) -> Release:
    return found_or_404(selectors.release_get, f"no release #{release_id}", release_id=release_id)


@require_GET
@requires("release.view")
def release_list(request):
    return render(request, "releases/release_list.html", {"releases": selectors.release_list()})


@require_http_methods(["GET", "POST"])
@requires("release.create")
def release_new(request):
    """GET: the form (fields may come prefilled from a link). POST ``action=check``: the gates the
    release would have, nothing saved; POST ``action=draft``: save it and open its page."""
    form = ReleaseForm(request.POST if request.method == "POST" else request.GET)
    form.is_valid()
    values = {
        name: form.cleaned_data.get(name, "") for name in FIELDS
    }  # lengths are the service's to check
    context = {
        "values": values,
        **selectors.release_form_choices(),
        "errors": field_problems(form),
        "plan": None,
    }
    if request.method == "GET":
        return render(request, "releases/release_new.html", context)
    if context["errors"]:
        return render(request, "releases/release_new.html", context, status=400)
    try:
        if form.cleaned_data["action"] == "check":
            context["plan"] = release_check(
                checkpoint=values["checkpoint"],
                draft_head=values["draft_head"],
                harness_version=values["harness_version"],
            )
            return render(request, "releases/release_new.html", context)
        release = release_draft(
            checkpoint=values["checkpoint"],
            draft_head=values["draft_head"],
            harness_version=values["harness_version"],
            notes=values["notes"],
            actor=request.user,
        )
    except ReleaseRefused as refused:
        context["errors"] = refused.errors
        return render(request, "releases/release_new.html", context, status=400)
    messages.success(
        request, f"release #{release.pk} drafted; a reviewer approves or rejects it here"
    )
    return redirect("releases:release_detail", release_id=release.pk)


def _manifest_or_why(release: Release) -> tuple[str | None, str]:
    """(the manifest's text, '') or (None, why there is none): a release drafted before manifests
    listed every file has no usable manifest (the launcher would refuse it); it is drafted again."""
    try:
        return manifest_text(selectors.release_manifest(release=release)), ""
    except ReleaseManifestError as error:
        return None, (
            f"release #{release.pk} has no usable manifest "
            f"({'; '.join(error.problems)}); draft a new "
            "release of the same checkpoint"
        )


def _detail_page(
    request,
    release: Release,
    *,
    errors: dict | None = None,
    posted: dict | None = None,
    status: int = 200,
):
    manifest, why = _manifest_or_why(release)
    return render(
        request,
        "releases/release_detail.html",
        {
            "release": release,
            "manifest": manifest if manifest is not None else why,
            "errors": errors or {},
            "posted": posted if errors else {},
        },
        status=status,
    )


@require_GET
@requires("release.view")
def release_detail(request, release_id: int):
    return _detail_page(request, _release_or_404(release_id))


@require_POST
@requires("release.approve")
def release_decide_view(request, release_id: int):
    release = _release_or_404(release_id)
    form = DecisionForm(request.POST)
    try:
        if not form.is_valid():
            raise ReleaseRefused(field_problems(form))
        release_decide(release=release, actor=request.user, **form.cleaned_data)
    except ReleaseRefused as refused:
        return _detail_page(
            request,
            _release_or_404(release_id),
            errors=refused.errors,
            posted=form.cleaned_data,
            status=400,
        )
    decision = form.cleaned_data["decision"]
    messages.success(
        request, f"release #{release.pk} {'approved' if decision == 'approve' else 'rejected'}"
    )
    return redirect("releases:release_detail", release_id=release.pk)


@require_POST
@requires("release.create")
def release_refresh(request, release_id: int):
    release = _release_or_404(release_id)
    try:
        release = release_refresh_gates(release=release, actor=request.user)
    except ReleaseRefused as refused:
        messages.error(request, str(refused))
        return redirect("releases:release_detail", release_id=release.pk)
    shown = ", ".join(f"{g['name']} {g['status']}" for g in release.gates)
    messages.success(request, f"gates computed again: {shown}")
    return redirect("releases:release_detail", release_id=release.pk)


@require_GET
@requires("release.view")
def release_manifest(request, release_id: int):
    """The manifest as a file (``python -m serving sglang-command --release FILE``)."""
    release = _release_or_404(release_id)
    manifest, why = _manifest_or_why(release)
    if manifest is None:
        return HttpResponse(why, status=409, content_type="text/plain; charset=utf-8")
    response = HttpResponse(manifest, content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="release-{release.pk}.json"'
    return response


@require_GET
@requires("release.view")
def release_signing_key(request):
    """The public half of the studio's release signing key, for the GPU host
    (``sglang-command --release FILE --release-key release-signing-key.pem``)."""
    from django.core.exceptions import ImproperlyConfigured

    from studio.releases.signing import release_public_key_pem

    try:
        pem = release_public_key_pem()
    except (
        ImproperlyConfigured
    ) as error:  # a missing key in production, or after releases were signed
        return HttpResponse(f"{error}\n", status=503, content_type="text/plain; charset=utf-8")
    response = HttpResponse(pem, content_type="application/x-pem-file")
    response["Content-Disposition"] = 'attachment; filename="release-signing-key.pem"'
    return response
