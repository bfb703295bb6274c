"""API tokens for scripts and CI: only a SHA-256 of the token is stored."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'CI'.")
    prefix = models.CharField(max_length=12, help_text="First characters, shown so a user can tell tokens apart.")
    digest = models.CharField(max_length=64, unique=True, help_text="sha256 hex of the full token.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"
