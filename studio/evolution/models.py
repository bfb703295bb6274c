"""Rows of the Harness Evolution loop (docs/architecture.md §5).

A *dataset* holds imported cases (the evaluation case format) and the catalogue
they refer to. An *evolution* fixes a Harness, a dataset, a case subset and a
policy endpoint; each *stage* evaluates a parent version, diagnoses its
failures, turns the accepted *proposals* into a candidate version, evaluates
the candidate on the same cases, and ends with a reviewer's decision. An
*evaluation run* is one version on one case list with one endpoint; its
per-case *results* are written as cases finish, so a run resumed after a worker
restart keeps them and scores only the rest.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from studio.endpoints.models import ModelEndpoint
from studio.harnesses.models import Draft, Harness, HarnessVersion
from studio.jobs.models import Job

User = settings.AUTH_USER_MODEL


class Dataset(models.Model):
    name = models.SlugField(max_length=80, unique=True)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=300, blank=True, help_text="The file the cases came from.")
    catalogue = models.JSONField(
        null=True,
        blank=True,
        help_text="The product catalogue the cases refer to; empty: the demo catalogue.",
    )
    heldout_share = models.FloatField(
        default=0.2, help_text="Share of cases kept out of diagnosis (0-0.5)."
    )
    case_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class DatasetCase(models.Model):
    DEV = "dev"
    HELDOUT = "heldout"

    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="cases")
    case_id = models.CharField(max_length=120)
    position = models.PositiveIntegerField(help_text="1-based order in the imported file.")
    line = models.PositiveIntegerField(help_text="Line of the case in the imported file.")
    category = models.CharField(max_length=40, db_index=True)
    split = models.CharField(
        max_length=8, choices=[(DEV, "dev"), (HELDOUT, "held-out")], default=DEV
    )
    comment = models.TextField(blank=True, help_text="The viewer comment(s), for lists and search.")
    data = models.JSONField()

    class Meta:
        ordering = ["dataset", "position"]
        constraints = [
            models.UniqueConstraint(fields=["dataset", "case_id"], name="dataset_case_unique")
        ]

    def __str__(self) -> str:
        return f"{self.case_id} ({self.category})"


class EvalRun(models.Model):
    QUEUED, RUNNING, SUCCEEDED, FAILED = "queued", "running", "succeeded", "failed"
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, SUCCEEDED, FAILED)]

    version = models.ForeignKey(HarnessVersion, on_delete=models.PROTECT, related_name="eval_runs")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="runs")
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="+")
    case_ids = models.JSONField(help_text="The cases this run scores, in order.")
    status = models.CharField(max_length=12, choices=STATUSES, default=QUEUED)
    job = models.ForeignKey(
        Job,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The job currently (or last) running this evaluation.",
    )
    attempts = models.PositiveIntegerField(
        default=0, help_text="Jobs started for this run (resumes + 1)."
    )
    scored_by_attempt = models.JSONField(
        default=dict, help_text="attempt number -> cases scored in it"
    )
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    wall_s = models.FloatField(default=0.0, help_text="Seconds spent scoring, over all attempts.")
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run #{self.pk}: {self.version} on {self.dataset}"

    @property
    def total(self) -> int:
        return len(self.case_ids)

    @property
    def badge(self) -> str:
        """The status to show: a run ended by cancelling its job says cancelled, not failed; a run
        whose job a worker already runs says running, not queued (the run's own row moves at its
        first scored chunk)."""
        if self.status == self.FAILED and self.job is not None and self.job.status == Job.CANCELLED:
            return Job.CANCELLED
        if self.status == self.QUEUED and self.job is not None and self.job.status == Job.RUNNING:
            return self.RUNNING
        return self.status

    @property
    def badge_label(self) -> str:
        """The badge in the words every job uses: a finished run "ran" (as its job did; whether it
        went well is what its figures and the fallback flag say)."""
        badge = self.badge
        return "ran" if badge == self.SUCCEEDED else badge


class CaseResult(models.Model):
    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case_id = models.CharField(max_length=120)
    category = models.CharField(max_length=40)
    split = models.CharField(max_length=8, default=DatasetCase.DEV)
    accuracy = models.FloatField()
    effectiveness = models.FloatField()
    avg = models.FloatField()
    reason_codes = models.CharField(
        max_length=500,
        blank=True,
        help_text="',code,code,' so one code can be filtered with contains.",
    )
    verdict = models.JSONField(
        help_text="The judge's verdict (evaluation.judges.base.Verdict.to_dict())."
    )
    reply = models.TextField(blank=True)
    route = models.CharField(max_length=10, blank=True)
    trajectory = models.JSONField()
    latency_s = models.FloatField(default=0.0)
    attempt = models.PositiveIntegerField(
        default=1, help_text="Which job attempt of the run scored it."
    )
    worker = models.CharField(
        max_length=200, blank=True, help_text="hostname and pid of the worker that scored it."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "case_id"], name="case_result_unique")
        ]
        indexes = [models.Index(fields=["run", "category"])]

    def __str__(self) -> str:
        return f"{self.case_id}: Acc {self.accuracy:g} Eff {self.effectiveness:g}"

    @property
    def reasons(self) -> list[str]:
        return [c for c in self.reason_codes.split(",") if c]

    @property
    def passed(self) -> bool:
        from evaluation.scoring import passed

        return passed({"accuracy": self.accuracy, "effectiveness": self.effectiveness})


class EvalChunk(models.Model):
    """A slice of a run's cases that one worker claims and scores
    (``studio.evolution.services.chunks``).

    A claim is a lease: the claimant writes ``heartbeat_at`` while it scores; a
    chunk whose claimant stopped beating for JOB_LEASE_S may be claimed again,
    and ``token`` (new at each claim) tells a claimant whether the chunk is still
    its own. The cases a chunk's claimant finished are ``CaseResult`` rows.
    """

    PENDING, CLAIMED, DONE = "pending", "claimed", "done"
    STATUSES = [(s, s) for s in (PENDING, CLAIMED, DONE)]

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField(
        help_text="0-based; chunk i holds the run's cases i, i+n, i+2n, ..."
    )
    case_ids = models.JSONField()
    status = models.CharField(max_length=8, choices=STATUSES, default=PENDING)
    token = models.CharField(
        max_length=32, blank=True, help_text="The current claim's id; empty when unclaimed."
    )
    worker = models.CharField(
        max_length=200, blank=True, help_text="hostname and pid of the (last) claimant."
    )
    claims = models.PositiveIntegerField(
        default=0, help_text="Times claimed (more than 1: a claimant was lost)."
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="eval_chunk_unique")]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"run #{self.run_id} chunk {self.index} ({self.status})"


class Evolution(models.Model):
    ACTIVE, PROMOTED, STOPPED = "active", "promoted", "stopped"
    STATUSES = [(ACTIVE, "active"), (PROMOTED, "promoted to production"), (STOPPED, "stopped")]
    RULE_BASED, LLM = "rule-based", "llm"

    name = models.CharField(max_length=120)
    harness = models.ForeignKey(Harness, on_delete=models.CASCADE, related_name="evolutions")
    base_version = models.ForeignKey(HarnessVersion, on_delete=models.PROTECT, related_name="+")
    dataset = models.ForeignKey(Dataset, on_delete=models.PROTECT, related_name="evolutions")
    endpoint = models.ForeignKey(
        ModelEndpoint,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The policy under evaluation (fixed for the whole evolution).",
    )
    case_ids = models.JSONField(help_text="The dev-set cases every stage is evaluated on.")
    diagnoser = models.CharField(
        max_length=12,
        default=RULE_BASED,
        choices=[(RULE_BASED, "rule-based (offline)"), (LLM, "LLM over an endpoint")],
    )
    diagnoser_endpoint = models.ForeignKey(
        ModelEndpoint,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="OpenAI-compatible endpoint (LLM diagnoser).",
    )
    tolerance = models.FloatField(
        default=0.02, help_text="Largest per-category AVG drop the business gate allows."
    )
    status = models.CharField(
        max_length=10,
        default=ACTIVE,
        choices=STATUSES,
        help_text="active until a decision ends it: promoted to production, or stopped",
    )
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name


class Stage(models.Model):
    PROMOTE_STAGING = "promote_staging"
    PROMOTE_PRODUCTION = "promote_production"
    ROLLBACK = "rollback"
    ANOTHER = "another_stage"
    STOP = "stop"
    DECISIONS = [
        (PROMOTE_STAGING, "promote to staging"),
        (PROMOTE_PRODUCTION, "promote to production"),
        (ROLLBACK, "roll back"),
        (ANOTHER, "another stage"),
        (STOP, "stop"),
    ]

    evolution = models.ForeignKey(Evolution, on_delete=models.CASCADE, related_name="stages")
    number = models.PositiveIntegerField()
    parent_version = models.ForeignKey(HarnessVersion, on_delete=models.PROTECT, related_name="+")
    parent_run = models.ForeignKey(
        EvalRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    candidate_version = models.ForeignKey(
        HarnessVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    candidate_run = models.ForeignKey(
        EvalRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    draft = models.ForeignKey(
        Draft,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The draft the candidate is being edited in.",
    )
    comparison = models.JSONField(default=dict, blank=True)
    decision = models.CharField(max_length=20, blank=True, choices=DECISIONS)
    decision_reason = models.TextField(blank=True)
    gates = models.JSONField(
        default=list,
        blank=True,
        help_text="The release gates as they stood when production was decided (Gate.to_dict()).",
    )
    gate_override_reason = models.TextField(
        blank=True,
        help_text="Why the reviewer promoted to production although a gate failed or had no data.",
    )
    decided_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["evolution", "number"]
        constraints = [
            models.UniqueConstraint(fields=["evolution", "number"], name="stage_number_unique")
        ]

    def __str__(self) -> str:
        return f"{self.evolution} stage {self.number}"


class Diagnosis(models.Model):
    stage = models.ForeignKey(Stage, on_delete=models.CASCADE, related_name="diagnoses")
    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="+")
    diagnoser = models.CharField(max_length=120)
    job = models.ForeignKey(Job, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=12, default=EvalRun.QUEUED, choices=EvalRun.STATUSES)
    error = models.TextField(blank=True)
    total = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    clusters = models.JSONField(default=list, blank=True)
    finding = models.TextField(
        blank=True,
        help_text="What the failures show as a whole, e.g. 'the model, not "
        "the Harness: ...' when no failing case used a tool or skill.",
    )
    created_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"diagnosis #{self.pk} ({self.diagnoser})"


class Proposal(models.Model):
    PENDING, ACCEPTED, EDITED, REJECTED = "pending", "accepted", "edited", "rejected"
    STATUSES = [(s, s) for s in (PENDING, ACCEPTED, EDITED, REJECTED)]

    diagnosis = models.ForeignKey(Diagnosis, on_delete=models.CASCADE, related_name="proposals")
    index = models.PositiveIntegerField()
    title = models.CharField(max_length=200)
    rationale = models.TextField(blank=True)
    reason = models.CharField(
        max_length=80, blank=True, help_text="The judge reason code it targets."
    )
    diagnoser = models.CharField(max_length=120, help_text="Which diagnoser produced it.")
    target_case_ids = models.JSONField(default=list)
    edits = models.JSONField(default=list)
    valid = models.BooleanField(default=False)
    problems = models.JSONField(default=list, blank=True)
    diff = models.JSONField(default=dict, blank=True)
    summary = models.JSONField(default=list, blank=True)
    evidence = models.JSONField(
        default=list, blank=True, help_text="What in the targeted trajectories backs each edit."
    )
    replay = models.JSONField(
        default=dict,
        blank=True,
        help_text="The targeted cases re-scored with the edits "
        "(evaluation.diagnosis.replay_proposal).",
    )
    status = models.CharField(max_length=10, default=PENDING, choices=STATUSES)
    review_reason = models.TextField(blank=True)
    reviewed_by = models.ForeignKey(User, null=True, on_delete=models.SET_NULL, related_name="+")
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["diagnosis", "index"]

    def __str__(self) -> str:
        return f"proposal {self.index + 1}: {self.title} ({self.status})"

    @property
    def prediction(self) -> str:
        """ "fixes N of M targeted cases (predicted)", from the replay before review; "" when not
        replayed."""
        from evaluation.diagnosis.predicted_fixes import prediction_text

        return prediction_text(self.replay)
