"""Reads of the accounts app: a user's API tokens."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import QuerySet

from studio.accounts.models import ApiToken


def api_token_list(*, user: User) -> QuerySet[ApiToken]:
    """The user's tokens that are not revoked."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True)


def api_token_get(*, user: User, token_id: int) -> ApiToken:
    """One of the user's own tokens (``ApiToken.DoesNotExist`` for another user's)."""
    return ApiToken.objects.get(pk=token_id, user=user)
