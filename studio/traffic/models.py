"""Rows of production traffic: a deployment, the tokens it posts with, the trajectories it sent.

A *deployment* is one running copy of the agent (a shop's live room, a staging box). It posts each
request's trajectory record (``harness.runtime.trajectory``'s ``to_dict``) with a token that belongs
to it alone, so a leaked token is revoked without touching the others and cannot post as another
deployment. A trajectory is stored once per (deployment, request id): a retried post is harmless.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.harnesses.models import HarnessVersion

User = settings.AUTH_USER_MODEL


class Deployment(models.Model):
    name = models.SlugField(
        max_length=80, unique=True, help_text="How URLs and tokens name it, e.g. shop-eu."
    )
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DeploymentToken(models.Model):
    """A deployment's API token: only its SHA-256 is stored; the token is shown once."""

    deployment = models.ForeignKey(Deployment, on_delete=models.CASCADE, related_name="tokens")
    prefix = models.CharField(max_length=14, help_text="First characters, to tell tokens apart.")
    digest = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.deployment} ({self.prefix}...)"


class TrafficTrajectory(models.Model):
    deployment = models.ForeignKey(
        Deployment, on_delete=models.CASCADE, related_name="trajectories"
    )
    request_id = models.CharField(
        max_length=200, help_text="The request's id: a repeated post is stored once."
    )
    harness_name = models.CharField(max_length=200)
    harness_digest = models.CharField(max_length=200)
    harness_version = models.ForeignKey(
        HarnessVersion,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The studio's version with that digest; "
        "empty when the digest is unknown here (the record is kept all the same).",
    )
    model_name = models.CharField(
        max_length=300, blank=True, help_text="The model it ran under, as sent."
    )
    model_fingerprint = models.CharField(
        max_length=100,
        blank=True,
        help_text="sha256 of the checkpoint's files (harness.checkpoints).",
    )
    outcome = models.CharField(max_length=12, db_index=True)
    route = models.CharField(max_length=10)
    category = models.CharField(
        max_length=40,
        blank=True,
        db_index=True,
        help_text="The request's intent label, when the deployment sent one.",
    )
    blocked_by = models.CharField(
        max_length=500,
        blank=True,
        help_text="',hook,hook,': the hooks that blocked a step (filtered with contains).",
    )
    latency_s = models.FloatField(default=0.0)
    reply = models.TextField(blank=True)
    comment = models.TextField(blank=True, help_text="The viewer comment(s), for the list.")
    record = models.JSONField(help_text="The trajectory record as the deployment sent it.")
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["deployment", "request_id"], name="traffic_request_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.deployment}/{self.request_id}"

    @property
    def case_id(self) -> str:
        """The id of this trajectory as a case (an annotation queue's item): the characters URLs
        and case files take, at most 120, readable (deployment-request id) and injective: a digest
        of the exact pair ends it, so deployment ``a`` request ``b-req-17`` and deployment ``a-b``
        request ``req-17`` (both ``a-b-req-17`` once cleaned) stay two cases."""
        return traffic_case_id(deployment=self.deployment.name, request_id=self.request_id)

    @property
    def blocking_hooks(self) -> list[str]:
        return [h for h in self.blocked_by.split(",") if h]

    @property
    def version_label(self) -> str:
        if self.harness_version_id:
            return f"{self.harness_version.harness.name} v{self.harness_version.number}"
        return f"{self.harness_name} (unknown digest {self.harness_digest[:12]})"


def traffic_case_id(*, deployment: str, request_id: str) -> str:
    """``TrafficTrajectory.case_id`` from its two parts."""
    import hashlib
    import re

    digest = hashlib.sha256(f"{deployment}\x00{request_id}".encode()).hexdigest()[:16]
    readable = re.sub(r"[^A-Za-z0-9._:-]+", "-", f"{deployment}-{request_id}").strip("-")
    return f"{readable[:103]}-{digest}"
