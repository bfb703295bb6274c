"""Who may do what in the evolution loop, on top of the studio's roles.

The studio's roles (accounts.roles) stay the single source of who holds which
role; this table only says which roles each evolution action needs, the same
way accounts.roles.PERMISSIONS does for the other apps (see
notes/evolution-needs.md: it can be merged there).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from studio.accounts.roles import ADMIN, ML_ENGINEER, OPERATOR, REVIEWER, ROLES, user_roles

EVOLUTION_PERMISSIONS: dict[str, frozenset[str]] = {
    # datasets, evolutions, runs, diagnoses, reports
    "evolution.view": frozenset(ROLES),
    # importing datasets, starting evolutions, runs, resumes and diagnoses
    "evolution.run": frozenset({OPERATOR, REVIEWER, ML_ENGINEER, ADMIN}),
    # accepting / rejecting proposals, committing the candidate, decisions
    "evolution.review": frozenset({REVIEWER, ADMIN}),
    # opening a proposal in the editor (a draft the operator refines)
    "evolution.edit": frozenset({OPERATOR, ADMIN}),
}


def evolution_can(user, permission: str) -> bool:
    if permission not in EVOLUTION_PERMISSIONS:
        raise KeyError(f"unknown permission {permission!r}; known: {', '.join(sorted(EVOLUTION_PERMISSIONS))}")
    return bool(user_roles(user) & EVOLUTION_PERMISSIONS[permission])


def evolution_requires(permission: str) -> Callable:
    """Anonymous users go to the login page; signed-in users without the permission get 403."""
    if permission not in EVOLUTION_PERMISSIONS:
        raise KeyError(f"unknown permission {permission!r}")

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not evolution_can(request.user, permission):
                raise PermissionDenied(f"this page needs the permission {permission}")
            return view(request, *args, **kwargs)

        wrapped.studio_permission = permission
        return wrapped

    return decorator
