"""API views: list versions, get a version's files, import a bundle, move a label."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.http import JsonResponse

from harness.numbers import decimal_int
from studio.api.auth import api_error, api_view
from studio.harnesses import selectors
from studio.harnesses.bundles import BundleArchiveError
from studio.harnesses.models import Harness, HarnessVersion, Label
from studio.harnesses.services import (
    InvalidBundle,
    StudioError,
    harness_import,
    harness_import_zip,
    label_move,
)
from studio.promotion import production_promote


def _version_json(version: HarnessVersion) -> dict:
    return {
        "harness": version.harness.name,
        "number": version.number,
        "digest": version.digest,
        "parent": getattr(version, "parent_number", None) if version.parent_id else None,
        "author": version.author.username if version.author_id else None,
        "message": version.message,
        "created_at": version.created_at.isoformat(),
        "labels": sorted(label.name for label in version.labels.all()),
        "summary": version.summary,
    }


def _harness_or_404(name: str) -> Harness | None:
    return selectors.harness_find(name=name)


@api_view("studio.view", ("GET",))
def harness_list(request):
    return JsonResponse(
        {
            "harnesses": [
                {
                    "name": h.name,
                    "versions": h.version_count,
                    "labels": {label.name: label.version.number for label in h.labels.all()},
                }
                for h in selectors.harness_list()
            ]
        }
    )


@api_view("studio.view", ("GET",))
def version_list(request, name: str):
    harness = _harness_or_404(name)
    if harness is None:
        return api_error(404, f"no Harness named {name}")
    return JsonResponse(
        {"versions": [_version_json(v) for v in selectors.version_list(harness=harness)]}
    )


@api_view("studio.view", ("GET",))
def version_files(request, name: str, number: int):
    harness = _harness_or_404(name)
    version = (
        harness
        and harness.versions.annotate(parent_number=F("parent__number"))
        .filter(number=number)
        .first()
    )
    if not version:
        return api_error(404, f"no version {number} of {name}")
    return JsonResponse(
        {**_version_json(version), "files": selectors.version_files(version=version)}
    )


def _json_body(request):
    """The request's JSON body (``{}`` when empty), read by the one bounded reader (nesting capped,
    so a body nested 100,000 deep is a 400 naming the limit, not a RecursionError); ValueError
    saying what is wrong."""
    from harness.userfiles import parse_json

    try:
        text = (request.body or b"{}").decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"body: not UTF-8 text ({error.reason} at byte {error.start})") from None
    return parse_json(text, source="body", what="request body")


@api_view("harness.edit", ("POST",))
def bundle_import(request):
    """POST a .zip (Content-Type: application/zip) or JSON {"files": {path: text}, "message":
    "..."}."""
    message = request.GET.get("message", "")
    try:
        if request.content_type == "application/zip":
            result = harness_import_zip(
                data=request.body,
                author=request.user,
                message=message or "Imported via the API",
                max_bytes=settings.MAX_IMPORT_BYTES,
            )
        else:
            try:
                payload = _json_body(request)
            except ValueError as error:
                return api_error(400, f"{error}; send a .zip or {{'files': {{...}}}}")
            files = payload.get("files") if isinstance(payload, dict) else None
            if not isinstance(files, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in files.items()
            ):
                return api_error(400, "files: an object mapping each bundle path to its text")
            result = harness_import(
                files=files,
                author=request.user,
                message=payload.get("message") or message or "Imported via the API",
            )
    except InvalidBundle as error:
        return api_error(400, "the bundle is not valid", problems=[str(p) for p in error.problems])
    except (BundleArchiveError, StudioError) as error:
        return api_error(400, str(error))
    return JsonResponse(
        {**_version_json(result.version), "created": result.created},
        status=201 if result.created else 200,
    )


@api_view("label.move", ("POST",))
def label_set(request, name: str, label: str):
    """POST JSON {"version": N, "reason": "...", "override_reason": "..."} to point `label` at
    version N.

    production goes through the release gates: a failed or no-data gate needs
    ``override_reason``."""
    harness = _harness_or_404(name)
    if harness is None:
        return api_error(404, f"no Harness named {name}")
    try:
        payload = _json_body(request)
    except ValueError as error:
        return api_error(400, f'{error}; send JSON {{"version": <number>, "reason": "..."}}')
    try:
        raw = payload.get("version")
        number = raw if type(raw) is int and abs(raw) < 10**18 else decimal_int(raw, max_digits=18)
        if number is None:
            raise ValueError(raw)
    except (ValueError, TypeError, AttributeError):
        return api_error(400, 'body: JSON {"version": <number>, "reason": "..."}')
    version = harness.versions.filter(number=number).first()
    if version is None:
        return api_error(404, f"no version {number} of {name}")
    reason = str(payload.get("reason", ""))
    try:
        if (
            label.strip().lower() == Label.PRODUCTION
        ):  # through the release gates, as on the Harness page
            production_promote(
                harness=harness,
                version=version,
                actor=request.user,
                reason=reason,
                override_reason=str(payload.get("override_reason", "")),
            )
            moved = selectors.label_get(harness=harness, name=Label.PRODUCTION)
        else:
            moved = label_move(
                harness=harness, name=label, version=version, actor=request.user, reason=reason
            )
    except PermissionDenied as error:
        return api_error(403, str(error))
    except StudioError as error:
        return api_error(400, str(error))
    return JsonResponse(
        {"harness": harness.name, "label": moved.name, "version": moved.version.number}
    )
