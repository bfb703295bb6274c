"""View decorators: sign-in plus one named permission from accounts.roles."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from studio.accounts.roles import PERMISSIONS, ROLE_NAMES, ROLES, user_can, user_roles


def refusal(user, permission: str) -> str:
    """Why ``user`` may not: who may, and what the account is, in words (no permission codename):
    'This page is for an ML engineer or an admin; your account is an operator.'"""
    may = [ROLE_NAMES[role] for role in ROLES if role in PERMISSIONS[permission]]
    held = [ROLE_NAMES[role] for role in ROLES if role in user_roles(user)]
    who = ", ".join(may[:-1]) + f" or {may[-1]}" if len(may) > 1 else may[0]
    has = " and ".join(held) if held else "not in any role yet"
    return f"This page is for {who}; your account is {has}."


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
                raise PermissionDenied(refusal(request.user, permission))
            return view(request, *args, **kwargs)

        wrapped.studio_permission = permission
        return wrapped

    return decorator
