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
    row = ApiToken.objects.create(user=user, name=name[:100], prefix=token[:10], digest=_token_digest(token))
    audit_record(actor=user, action="api_token.create", target=f"token {row.prefix}...", data={"name": row.name})
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
