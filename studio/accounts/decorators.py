"""View decorators: sign-in plus one named permission from accounts.roles."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from studio.accounts.roles import PERMISSIONS, user_can


def requires(permission: str) -> Callable:
    """Anonymous users go to the login page; signed-in users without the permission get 403."""
    if permission not in PERMISSIONS:
        raise KeyError(f"unknown permission {permission!r}")

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not user_can(request.user, permission):
                raise PermissionDenied(f"this page needs the permission {permission}")
            return view(request, *args, **kwargs)

        wrapped.studio_permission = permission
        return wrapped

    return decorator
