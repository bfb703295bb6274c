"""Rows of the compatibility matrix: which endpoint serves a Harness label, and the cells.

A *cell* is one model on one Harness version on one version of the compatibility set
(``evaluation.compatibility``), computed by one evaluation run of the evolution app. It is keyed by
what decides its figures: the model's fingerprint (a checkpoint's weights, a script's bytes), the
version's digest and the set version; a request for the same three is answered with the cell that
exists, never computed again. A *label server* says which endpoint serves a Harness's production
(or staging) label: the row the gate and the retrain alarm read.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Dataset, EvalRun
from studio.harnesses.models import Harness, HarnessVersion

User = settings.AUTH_USER_MODEL


class LabelServer(models.Model):
    harness = models.ForeignKey(Harness, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(
        max_length=40, help_text="production, staging or another label of the Harness."
    )
    endpoint = models.ForeignKey(
        ModelEndpoint,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The endpoint that serves the Harness version at this label.",
    )
    updated_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["harness", "label"]
        constraints = [
            models.UniqueConstraint(fields=["harness", "label"], name="label_server_unique")
        ]

    def __str__(self) -> str:
        return f"{self.harness.name}@{self.label} served by {self.endpoint.name}"


class Cell(models.Model):
    model_fingerprint = models.CharField(
        max_length=64,
        help_text=(
            "What the model is: a checkpoint's serving.endpoint "
            "fingerprint, a script's sha256, a server's URL + model."
        ),
    )
    endpoint = models.ForeignKey(
        ModelEndpoint,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The endpoint the cell was computed through.",
    )
    version = models.ForeignKey(HarnessVersion, on_delete=models.PROTECT, related_name="+")
    version_digest = models.CharField(max_length=64)
    set_version = models.CharField(
        max_length=16, help_text="evaluation.compatibility.set_version of the set."
    )
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="+")
    run = models.ForeignKey(EvalRun, on_delete=models.PROTECT, related_name="+")
    reason = models.CharField(
        max_length=300, help_text="Why it was computed (a label, the registry, a person)."
    )
    figures = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            "evaluation.compatibility.cell_figures of the "
            "run's results, kept once the run succeeded."
        ),
    )
    requested_by = models.ForeignKey(
        User,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text=(
            "Who asked for it, or on whose behalf a follow-on was queued (whose label move or "
            "training run caused it): they may cancel its run."
        ),
    )
    automatic = models.BooleanField(
        default=False,
        help_text=(
            "A follow-on the studio queued itself (a label move, a new checkpoint), not a "
            "person's request: its runs are automatic jobs on the follow-on queue."
        ),
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["model_fingerprint", "version_digest", "set_version"],
                name="compatibility_cell_unique",
            )
        ]

    def __str__(self) -> str:
        return f"cell #{self.pk}: {self.endpoint.name} on {self.version} (set {self.set_version})"


class SetDataset(models.Model):
    """The dataset the studio imported for one version of the compatibility set: the set is found
    by this row (the dataset's id), never by its name, so a dataset someone imported under the name
    the studio derives (``compatibility-<version>``) is never read as the set."""

    set_version = models.CharField(max_length=16, unique=True)
    dataset = models.OneToOneField(Dataset, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"compatibility set {self.set_version}: {self.dataset.name}"
