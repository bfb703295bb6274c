"""Token authentication for API views: `Authorization: Bearer <token>`."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from studio.accounts.roles import PERMISSIONS, user_can
from studio.accounts.services import api_token_authenticate


def api_error(status: int, message: str, **extra) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def api_view(permission: str, methods: tuple[str, ...]) -> Callable:
    """Authenticate by token (no session, so no CSRF), check one permission and the method."""
    if permission not in PERMISSIONS:
        raise KeyError(f"unknown permission {permission!r}")

    def decorator(view: Callable) -> Callable:
        @csrf_exempt
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            header = request.headers.get("Authorization", "")
            scheme, _, token = header.partition(" ")
            user = (
                api_token_authenticate(token=token.strip()) if scheme.lower() == "bearer" else None
            )
            if user is None:
                return api_error(
                    401,
                    "send a valid API token: 'Authorization: Bearer "
                    "hst_...' (make one at /accounts/tokens/)",
                )
            if request.method not in methods:
                return api_error(405, f"use {' or '.join(methods)}")
            if not user_can(user, permission):
                return api_error(403, f"this action needs the permission {permission}")
            request.user = user
            return view(request, *args, **kwargs)

        wrapped.studio_permission = permission
        return wrapped

    return decorator
