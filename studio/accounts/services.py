"""Writes for accounts: roles, demo users, API tokens."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone

from studio.accounts.models import ApiToken
from studio.accounts.roles import ROLES
from studio.audit.services import audit_record

TOKEN_PREFIX = "hst_"


def roles_ensure() -> list[Group]:
    """Create the role groups if missing (idempotent)."""
    return [Group.objects.get_or_create(name=name)[0] for name in ROLES]


def user_create(*, username: str, password: str, roles: list[str], email: str = "") -> User:
    """Create (or update the password and roles of) a user with the given roles."""
    unknown = set(roles) - set(ROLES)
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}; valid roles: {', '.join(ROLES)}")
    roles_ensure()
    user, _ = User.objects.get_or_create(username=username, defaults={"email": email})
    user.set_password(password)
    user.save()
    user.groups.set(Group.objects.filter(name__in=roles))
    return user


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """Create a token; returns the row and the full token, which is shown once and never stored."""
    name = name.strip()
    if not name:
        raise ValueError("name: give the token a name, e.g. 'CI'")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        user=user, name=name[:100], prefix=token[:10], digest=_token_digest(token)
    )
    audit_record(
        actor=user,
        action="api_token.create",
        target=f"token {row.prefix}...",
        data={"name": row.name},
    )
    return row, token


def api_token_revoke(*, token: ApiToken, actor: User) -> None:
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    audit_record(actor=actor, action="api_token.revoke", target=f"token {token.prefix}...", data={})


def api_token_authenticate(*, token: str) -> User | None:
    """The active user owning `token`, or None."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    row = (
        ApiToken.objects.select_related("user")
        .filter(digest=_token_digest(token), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if row is None:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row.user


# -- sign-in throttling
# --------------------------------------------------------------------------------------


def _client_address(request) -> str:
    return (request.META.get("REMOTE_ADDR") or "")[:64]


def sign_in_refusal(*, request, username: str) -> str | None:
    """Why this sign-in attempt is refused before its password is checked, or None:
    SIGN_IN_MAX_FAILURES failures for the name, or four times that from the address, within
    SIGN_IN_WINDOW_S. The right password does not help while it lasts (30 wrong admin passwords in
    12 s were once all answered, and the right one still worked). The message does not say whether
    the account exists."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from studio.accounts.models import SignInFailure

    window = timedelta(seconds=settings.SIGN_IN_WINDOW_S)
    since = timezone.now() - window
    name = username.strip().lower()[:150]
    limit = settings.SIGN_IN_MAX_FAILURES
    by_name = SignInFailure.objects.filter(username=name, at__gte=since)
    by_address = SignInFailure.objects.filter(address=_client_address(request), at__gte=since)
    for failures, allowed, what in (
        (by_name, limit, f"for the username {name!r}"),
        (by_address, 4 * limit, "from your address"),
    ):
        count = failures.count()
        if count >= allowed:
            oldest = failures.order_by("-at")[allowed - 1].at
            wait = max(1, int((oldest + window - timezone.now()).total_seconds() // 60) + 1)
            return (
                f"Too many failed sign-ins {what}: {count} in "
                f"the last {settings.SIGN_IN_WINDOW_S // 60} "
                f"minutes (the limit is {allowed}). Try again "
                f"in {wait} minute(s); an admin can also reset "
                "the password."
            )
    return None


def sign_in_failed(*, request, username: str) -> None:
    from studio.accounts.models import SignInFailure

    SignInFailure.objects.create(
        username=username.strip().lower()[:150], address=_client_address(request)
    )


def sign_in_succeeded(*, username: str) -> None:
    from studio.accounts.models import SignInFailure

    SignInFailure.objects.filter(username=username.strip().lower()[:150]).delete()
