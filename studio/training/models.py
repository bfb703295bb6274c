"""A run the studio started: a run folder on the workers' shared disk and the library commands that
fill it.

The folder is the truth (config files, metrics.jsonl, checkpoints, model card, eval and replay
summaries, all written by training/ and serving/); the row says who started what, with which
config (and its digest), from which checkpoint and Harness version, and which job runs it now.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.db import models


class TrainingRun(models.Model):
    SFT, OPD, RL, PIPELINE, EVAL, REPLAY = "sft", "opd", "rl", "pipeline", "eval", "replay"
    MTP, ABLATION = "mtp", "ablation"
    KINDS = [
        (SFT, "HSA-SFT"),
        (OPD, "General OPD"),
        (RL, "HSA-RL"),
        (PIPELINE, "Pipeline (SFT -> OPD -> RL)"),
        (MTP, "MTP draft-head adaptation"),
        (ABLATION, "Ablation (Table 4)"),
        (EVAL, "Checkpoint evaluation"),
        (REPLAY, "Deployment replay"),
    ]
    # kinds that train (a trainer's metrics.jsonl, checkpoint-N/, final/, resumable from a
    # checkpoint) ...
    TRAINING_KINDS = (SFT, OPD, RL, PIPELINE, MTP)
    # ... of which these leave a policy in final/ (an MTP run leaves a draft head: not a model to
    # serve)
    POLICY_KINDS = (SFT, OPD, RL, PIPELINE)

    kind = models.CharField(max_length=12, choices=KINDS, db_index=True)
    title = models.CharField(max_length=200)
    preset = models.CharField(
        max_length=40, blank=True, help_text="The preset the form started from, if any."
    )
    folder = models.CharField(
        max_length=500, help_text="Absolute path of the run folder (TRAINING_RUNS_DIR/run-N)."
    )
    steps = models.JSONField(
        default=list,
        help_text=(
            "The commands, in order: [{name, argv (after "
            "`python -m`), config_file, output}] run as written."
        ),
    )
    config = models.JSONField(default=dict, help_text="Each step's resolved config, by step name.")
    config_digest = models.CharField(
        max_length=64, help_text="sha256 of the resolved configs (canonical JSON)."
    )
    model = models.CharField(
        max_length=500,
        blank=True,
        help_text=("The model it starts from or evaluates: local, tiny or a checkpoint folder."),
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="children",
        help_text="The studio run whose checkpoint this run starts from or evaluates.",
    )
    harness_version = models.ForeignKey(
        "harnesses.HarnessVersion",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    job = models.ForeignKey(
        "jobs.Job",
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The job running it now, or the last one that did.",
    )
    attempts = models.PositiveSmallIntegerField(default=1)
    summary = models.JSONField(
        null=True,
        blank=True,
        help_text=(
            "Read from the folder when the job ran: model "
            "card, evaluation summary or replay summary."
        ),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run #{self.pk} {self.kind}"

    @property
    def is_training(self) -> bool:
        return self.kind in self.TRAINING_KINDS

    @property
    def is_policy(self) -> bool:
        """Its final/ is a policy checkpoint (a model to evaluate, serve or train from)."""
        return self.kind in self.POLICY_KINDS

    @property
    def path(self) -> Path:
        return Path(self.folder)

    @property
    def replay_dir(self) -> Path:
        """Where a replay run's record is: its step's output, the folder its ``run_id`` names
        (``replay`` unless the form named another)."""
        return self.path / (self.steps[-1]["output"] if self.steps else "replay")

    @property
    def final_dir(self) -> Path | None:
        """Where the run's trained model is (or will be): the last step's final/ (a pipeline's last
        stage)."""
        if not self.is_training or not self.steps:
            return None
        last = self.steps[-1]
        output = self.path / last["output"]
        if last["name"].startswith(self.PIPELINE):
            stages = self.config.get(last["name"], {}).get("stages") or ["sft", "opd", "rl"]
            output = output / stages[-1]
        return output / "final"
