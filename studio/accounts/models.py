"""API tokens for scripts and CI (only a SHA-256 of the token is stored), and failed sign-ins
(throttling)."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI'.")
    prefix = models.CharField(
        max_length=12, help_text="First characters, shown so a user can tell tokens apart."
    )
    digest = models.CharField(max_length=64, unique=True, help_text="sha256 hex of the full token.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"


class SignInFailure(models.Model):
    """One failed sign-in: the name Django signs in (``sign_in_name``: NFKC, lower-cased) and the
    client address (``client_address``). Recent ones throttle sign-in
    (``studio.accounts.services.sign_in_refusal`` and ``sign_in_delay``); a successful sign-in
    clears its name's."""

    username = models.CharField(max_length=150, db_index=True)
    address = models.CharField(max_length=64, db_index=True)
    at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-at"]

    def __str__(self) -> str:
        return (
            f"failed sign-in as {self.username} from {self.address} at {self.at:%Y-%m-%d %H:%M:%S}"
        )
