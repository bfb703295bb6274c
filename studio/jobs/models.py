"""The job row: what a worker is doing, how far it got, and how it ended."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Job(models.Model):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # the job's own status: "ran" says the job ran to its end, not that the work went well
    # (what it did is its kind's outcome, studio.jobs.registry)
    STATUSES = [
        (QUEUED, "queued"),
        (RUNNING, "running"),
        (SUCCEEDED, "ran"),
        (FAILED, "failed"),
        (CANCELLED, "cancelled"),
    ]
    ACTIVE = (QUEUED, RUNNING)

    kind = models.CharField(
        max_length=40, db_index=True, help_text="A key of studio.jobs.registry.JOB_KINDS."
    )
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=12, choices=STATUSES, default=QUEUED, db_index=True)
    progress = models.PositiveSmallIntegerField(default=0, help_text="0-100")
    log_tail = models.TextField(
        blank=True, help_text="The last JOB_LOG_TAIL_CHARS characters of the log."
    )
    params = models.JSONField(default=dict, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    outcome = models.CharField(
        max_length=300,
        blank=True,
        help_text="What the work did, in its kind's words, written when the job ran to its end.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    automatic = models.BooleanField(
        default=False,
        help_text=(
            "Queued by the studio itself (a follow-on of another "
            "job), not by a person: outside the per-user quota, "
            "and it waits while a person's job is queued on its queue."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life from the worker."
    )
    worker = models.CharField(
        max_length=200, blank=True, help_text="hostname and pid of the worker process."
    )
    cancel_requested_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Set when someone asks a running job to stop; it stops at its next report.",
    )
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"job #{self.pk} {self.kind} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None:
            return None
        end = self.finished_at
        if end is None:
            from django.utils import timezone

            end = timezone.now()
        return (end - self.started_at).total_seconds()
