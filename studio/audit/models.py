"""The audit event: who did what to which object, when, with details."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AuditEvent(models.Model):
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(
        max_length=64, db_index=True, help_text="e.g. version.commit, label.move"
    )
    harness = models.ForeignKey(
        "harnesses.Harness",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="audit_events",
    )
    target = models.CharField(
        max_length=255, help_text="Human-readable object, e.g. 'livestream-avatar v3'."
    )
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"
