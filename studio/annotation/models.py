"""Rows of human labelling (docs/architecture.md §6's rubric, applied by people).

A *queue* holds *items*: a case to label (the request, in the evaluation case format, with its gold
left to fill) and the reply the agent gave with its trajectory. Each *label* is one person's:
Accuracy 0/1 and Effectiveness 0/0.5/1 of that reply, the expected reply skills and tools, a route,
a category and a note, with who and when. An item labelled by two people who disagree goes back to
the queue until a third label settles it by majority. An *export* turns the settled items into a new
dataset (``<queue>-v<N>``) that evaluation runs, evolutions and the compatibility set read as any
other; a *calibration* is one judge measured against one such set (``evaluation.calibration``).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.evolution.models import Dataset

User = settings.AUTH_USER_MODEL


class AnnotationQueue(models.Model):
    name = models.SlugField(max_length=60, unique=True)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=300, blank=True, help_text="Where its items came from.")
    catalogue = models.JSONField(
        null=True, blank=True, help_text="The catalogue its cases refer to (empty: demo)."
    )
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class QueueItem(models.Model):
    queue = models.ForeignKey(AnnotationQueue, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    case_id = models.CharField(max_length=200)
    case = models.JSONField(
        help_text="The request as an hs-case/1 case; its gold is what the labels fill in."
    )
    reply = models.TextField(blank=True, help_text="The reply being labelled.")
    route = models.CharField(max_length=10, default="public")
    trajectory = models.JSONField(null=True, blank=True)
    origin = models.CharField(
        max_length=200, blank=True, help_text="e.g. 'traffic shop-eu/req-17', 'run #4'."
    )
    provenance = models.JSONField(
        default=dict,
        blank=True,
        help_text="Where the reply came from: kind, run, policy, Harness, case id.",
    )
    traffic = models.ForeignKey(
        "traffic.TrafficTrajectory",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["queue", "position"]
        constraints = [models.UniqueConstraint(fields=["queue", "case_id"], name="queue_item_once")]

    def __str__(self) -> str:
        return f"{self.queue} #{self.position} {self.case_id}"


class CaseLabel(models.Model):
    item = models.ForeignKey(QueueItem, on_delete=models.CASCADE, related_name="labels")
    labeller = models.ForeignKey(User, on_delete=models.PROTECT, related_name="+")
    accuracy = models.PositiveSmallIntegerField(
        help_text="1: every fact the reply states is supported; else 0."
    )
    effectiveness = models.FloatField(
        help_text="1 fully serves the viewer, 0.5 partly, 0 not at all."
    )
    category = models.CharField(max_length=40)
    route = models.CharField(max_length=10, help_text="The route the reply should have taken.")
    reply_skills = models.JSONField(default=list, help_text="Reply skills a good answer loads.")
    tools = models.JSONField(default=list, help_text="Tools a good answer calls.")
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["item", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "labeller"], name="one_label_per_person")
        ]

    def __str__(self) -> str:
        return (
            f"{self.item.case_id} by {self.labeller_id}: "
            f"Acc {self.accuracy} Eff {self.effectiveness:g}"
        )


class QueueExport(models.Model):
    """A labelled set's version: the dataset an export of the queue made."""

    queue = models.ForeignKey(AnnotationQueue, on_delete=models.CASCADE, related_name="exports")
    version = models.PositiveIntegerField()
    dataset = models.OneToOneField(Dataset, on_delete=models.PROTECT, related_name="labelled_from")
    items = models.PositiveIntegerField()
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["queue", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["queue", "version"], name="queue_export_version")
        ]

    def __str__(self) -> str:
        return f"{self.queue} v{self.version}"


class LabelSet(models.Model):
    """A human-labelled set a judge may be calibrated on: a calibration file (``hs-calibration/1``,
    ``evaluation.calibration``) that an export of an annotation queue wrote, or the committed one
    (``settings.JUDGE_CALIBRATION_FILE``) read into the studio. Each labelled reply keeps its
    labels (who, when), its queue item and origin, and its part (dev or held-out). An imported or
    generated dataset has none, so no calibration reads it."""

    dataset = models.OneToOneField(Dataset, on_delete=models.PROTECT, related_name="label_set")
    export = models.OneToOneField(
        QueueExport, null=True, blank=True, on_delete=models.CASCADE, related_name="label_set"
    )
    path = models.CharField(
        max_length=300, blank=True, help_text="The committed file it was read from (else empty)."
    )
    sha256 = models.CharField(max_length=64, db_index=True)
    header = models.JSONField(default=dict, help_text="The file's header line.")
    content = models.TextField(help_text="The calibration file, as exported or committed.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.path or f"{self.dataset.name}"

    @property
    def replies(self) -> int:
        return int(self.header.get("replies") or 0)

    @property
    def parts(self) -> dict[str, int]:
        return self.header.get("parts") or {}

    @property
    def labeller_agreement(self) -> dict:
        return self.header.get("labeller_agreement") or {"n": 0}


class JudgeCalibration(models.Model):
    """One judge measured against one labelled set version, per part
    (``evaluation.calibration.calibrate_parts``). The figures stored are the held-out part's (the
    part no judge change is tuned on); the report holds both parts with their intervals."""

    judge = models.CharField(
        max_length=500,
        db_index=True,
        help_text="The judge spec: programmatic, "
        "llm:BASE_URL:MODEL or panel:A|B|C (evaluation.judges.make_judge).",
    )
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="calibrations")
    n = models.PositiveIntegerField(default=0)
    accuracy_agreement = models.FloatField(default=0.0)
    accuracy_kappa = models.FloatField(default=0.0)
    effectiveness_agreement = models.FloatField(default=0.0)
    effectiveness_kappa = models.FloatField(default=0.0)
    report = models.JSONField(
        default=dict, help_text="calibrate_parts' report: per part, confusion, disagreements."
    )
    label_set = models.ForeignKey(
        LabelSet, null=True, blank=True, on_delete=models.PROTECT, related_name="calibrations"
    )
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    retired_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.judge} on {self.dataset}"

    @property
    def part(self) -> str:
        """The part the stored figures are of."""
        return "heldout" if "heldout" in (self.report.get("parts") or {}) else "all"

    def figures(self, part: str) -> dict | None:
        return (self.report.get("parts") or {}).get(part)

    @property
    def stored_figures(self) -> dict:
        """The report of the part the row's figures are of (with the intervals), or {}."""
        return self.figures("heldout") or self.report.get("all") or {}

    @property
    def lowest_agreement(self) -> float:
        return min(self.accuracy_agreement, self.effectiveness_agreement)
