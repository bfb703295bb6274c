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


def client_address(*, request) -> str:
    """The address of the client that sent ``request``: the socket's peer, or, behind
    ``TRUSTED_PROXY_HOPS`` proxies that each append the address they received from to
    ``X-Forwarded-For`` (nginx's ``$proxy_add_x_forwarded_for``), the address the outermost trusted
    proxy received from. Entries left of it were written by the client and are never believed, and
    without the setting the header is not read at all; a request that did not pass every trusted
    proxy (too few entries) counts under its socket address."""
    from django.conf import settings

    address = request.META.get("REMOTE_ADDR") or ""
    hops = settings.TRUSTED_PROXY_HOPS
    if hops:
        forwarded = [
            part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")
        ]
        forwarded = [part for part in forwarded if part]
        if len(forwarded) >= hops:
            address = forwarded[-hops]
    return address[:64]


def sign_in_name(*, username: str) -> str:
    """The name a sign-in attempt is counted under: the name Django authenticates (its sign-in
    form's ``UsernameField``: trimmed, NFKC-normalised), lower-cased, so that look-alike spellings
    (``ｍｅｉ``, ``𝐦ei``) and other cases of one account share its failures."""
    import unicodedata

    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username.strip()).lower())[
        :150
    ]


def _wait_minutes(failures, allowed: int, window) -> int:
    from django.utils import timezone

    oldest = failures.order_by("-at")[allowed - 1].at
    return max(1, int((oldest + window - timezone.now()).total_seconds() // 60) + 1)


def sign_in_refusal(*, request, username: str) -> str | None:
    """Why this sign-in attempt is refused before its password is checked, or None:
    SIGN_IN_MAX_FAILURES failures for the name (``sign_in_name``) within SIGN_IN_WINDOW_S. The right
    password does not help while it lasts (30 wrong admin passwords in 12 s were once all answered,
    and the right one still worked). The message does not say whether the account exists. Failures
    from one address never refuse: they delay (``sign_in_delay``), so that wrong passwords under
    made-up names from an address many people share cannot keep a real account out."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from studio.accounts.models import SignInFailure

    window = timedelta(seconds=settings.SIGN_IN_WINDOW_S)
    name = sign_in_name(username=username)
    limit = settings.SIGN_IN_MAX_FAILURES
    failures = SignInFailure.objects.filter(username=name, at__gte=timezone.now() - window)
    count = failures.count()
    if count < limit:
        return None
    return (
        f"Too many failed sign-ins for the username {name!r}: {count} in "
        f"the last {settings.SIGN_IN_WINDOW_S // 60} minutes (the limit is {limit}). Try again "
        f"in {_wait_minutes(failures, limit, window)} minute(s); an admin can also reset "
        "the password."
    )


def sign_in_delay(*, request) -> float:
    """Seconds this attempt waits before its password is checked: ``SIGN_IN_ADDRESS_DELAY_S`` once
    its client address (``client_address``) has ``4 * SIGN_IN_MAX_FAILURES`` failures within the
    window, else 0. A delay, not a wall: a person behind the same address still signs in."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from studio.accounts.models import SignInFailure

    since = timezone.now() - timedelta(seconds=settings.SIGN_IN_WINDOW_S)
    recent = SignInFailure.objects.filter(address=client_address(request=request), at__gte=since)
    if recent.count() >= 4 * settings.SIGN_IN_MAX_FAILURES:
        return settings.SIGN_IN_ADDRESS_DELAY_S
    return 0.0


def sign_in_failed(*, request, username: str) -> None:
    from studio.accounts.models import SignInFailure

    SignInFailure.objects.create(
        username=sign_in_name(username=username), address=client_address(request=request)
    )


def sign_in_succeeded(*, username: str) -> None:
    from studio.accounts.models import SignInFailure

    SignInFailure.objects.filter(username=sign_in_name(username=username)).delete()
