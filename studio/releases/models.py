"""A release: one checkpoint, optionally its MTP draft head, and one Harness version, gated and
decided.

The row keeps what the manifest says (``serving.release``): the checkpoint's folder, every file of
it (name, size, sha256) and their fingerprint at drafting, the same of the draft head and its card,
the Harness version, the gate snapshot (each gate naming the run that fed it), who drafted it and
who decided, when and why.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Release(models.Model):
    DRAFT, APPROVED, REJECTED = "draft", "approved", "rejected"
    STATUSES = [(DRAFT, "draft"), (APPROVED, "approved"), (REJECTED, "rejected")]

    checkpoint_run = models.ForeignKey(
        "training.TrainingRun",
        on_delete=models.PROTECT,
        related_name="releases",
        help_text="The studio training run whose final model is released.",
    )
    checkpoint_path = models.CharField(
        max_length=500, help_text="Absolute path of the run's final/ folder."
    )
    checkpoint_fingerprint = models.CharField(
        max_length=64,
        help_text=(
            "harness.checkpoints' fingerprint of the folder when "
            "the release was drafted (the digest of its files)."
        ),
    )
    checkpoint_files = models.JSONField(
        default=list,
        blank=True,
        help_text=(
            "Every file of the checkpoint folder when "
            "drafted: [{name, size, sha256}], sorted by name."
        ),
    )
    draft_head_path = models.CharField(
        max_length=500, blank=True, help_text="The MTP draft-head folder, if any."
    )
    draft_head_fingerprint = models.CharField(max_length=64, blank=True)
    draft_head_files = models.JSONField(
        default=list,
        blank=True,
        help_text=("Every file of the draft-head folder when drafted: [{name, size, sha256}]."),
    )
    draft_head_card = models.JSONField(
        null=True, blank=True, help_text="The head's card.json when drafted."
    )
    harness_version = models.ForeignKey(
        "harnesses.HarnessVersion", on_delete=models.PROTECT, related_name="+"
    )
    gates = models.JSONField(
        default=list, help_text="[{name, status, detail, run_id, stage_id}] as last computed."
    )
    gates_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=STATUSES, default=DRAFT, db_index=True)
    notes = models.TextField(blank=True, help_text="What the ML engineer says about this release.")
    drafted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)
    override_reason = models.TextField(
        blank=True, help_text="Why it was approved although a gate blocked it."
    )
    signed_manifest = models.JSONField(
        null=True,
        blank=True,
        help_text=(
            "The manifest as signed when the release was decided "
            "(release_decide); downloads serve exactly this. "
            "A decided release without it (set in the database "
            "alone, or decided before signing moved here) has "
            "only an unsigned manifest, which the launcher refuses."
        ),
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"release #{self.pk} ({self.status})"

    @property
    def blocking(self) -> list[dict]:
        return [g for g in self.gates if g.get("status") != "pass"]
