"""Fields every training stage shares.

Each stage has a ``<stage>_config.py`` dataclass that extends ``StageConfig``; every field carries
a ``help`` text and, where its value names something (a checkpoint, a Harness, a file), a ``kind``:
the schema that ``python -m training <stage>``'s flags, ``load_config``'s reading of a YAML or
JSON file and the studio's form are all built from (``harness/config_schema.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

#: Trackers the studio's form offers for ``report_to`` (the command line passes any name on to
#: transformers).
TRACKERS = ("none", "tensorboard", "mlflow", "wandb", "trackio")


@dataclass
class StageConfig:
    """Settings shared by the SFT, OPD and RL stages."""

    model: str = field(
        default="local",
        metadata={
            "kind": "checkpoint",
            "help": (
                "Model to start from: 'local' (SmolLM2-135M-Instruct, the default model), 'tiny' "
                "(2-layer random model for tests) or a checkpoint "
                "folder (e.g. the previous stage's final/)."
            ),
        },
    )
    output_dir: str = field(
        default="runs/hat",
        metadata={
            "help": (
                "Run folder: resolved config, metrics.jsonl, "
                "checkpoints, final model and model card."
            )
        },
    )
    harness: str = field(
        default="demo",
        metadata={
            "kind": "harness",
            "help": (
                "Harness folder the stage trains under ('demo' "
                "= the shipped livestream-avatar Harness)."
            ),
        },
    )
    max_steps: int = field(default=60, metadata={"help": "Optimizer steps of this stage."})
    stop_after_steps: int = field(
        default=0,
        metadata={
            "help": (
                "Stop after this many steps while the "
                "learning-rate schedule still runs over max_steps "
                "(0: train all max_steps). For reproducing "
                "a run that was cut short at a checkpoint."
            )
        },
    )
    learning_rate: float = field(default=2e-5, metadata={"help": "Peak learning rate (AdamW)."})
    per_device_train_batch_size: int = field(
        default=2, metadata={"help": "Examples per forward pass."}
    )
    gradient_accumulation_steps: int = field(
        default=1, metadata={"help": "Forward passes per optimizer step."}
    )
    gradient_checkpointing: bool = field(
        default=False,
        metadata={
            "help": (
                "Recompute each layer's activations in the backward "
                "pass instead of keeping them: about a third "
                "more compute for far less memory. On CPU, padded "
                "batches use PyTorch's attention math path, "
                "which keeps a full attention matrix per layer "
                "(about 18 GB for 2 x 4,096 tokens on SmolLM2-135M)."
            )
        },
    )
    warmup_steps: int = field(
        default=0, metadata={"help": "Linear warm-up steps of the learning rate."}
    )
    logging_steps: int = field(
        default=1, metadata={"help": "Write a metrics.jsonl row every N steps."}
    )
    save_steps: int = field(
        default=20,
        metadata={
            "help": ("Save a resumable checkpoint every N steps (checkpoint-N/ in the run folder).")
        },
    )
    save_total_limit: int = field(
        default=2, metadata={"help": "Keep at most this many checkpoints."}
    )
    resume: bool = field(
        default=True,
        metadata={"help": ("Resume from the run folder's last checkpoint when one exists.")},
    )
    progress_dir: str = field(
        default="",
        metadata={
            "help": (
                "A folder to commit, for resuming on another machine: when the stage stops "
                "(stop_after_steps or max_steps) its last checkpoint is copied there without the "
                "optimizer state, with the config, data report and metrics; a run whose folder "
                "has no checkpoint as far on resumes from it (Adam's moments start afresh, the "
                "learning-rate schedule goes on). '' = off."
            )
        },
    )
    seed: int = field(
        default=0, metadata={"help": "Seed for data order, sampling and augmentation."}
    )
    report_to: list[str] = field(
        default_factory=lambda: ["none"],
        metadata={
            "choices": TRACKERS,
            "help": (
                "Trackers TRL reports to (passed through to "
                "transformers): e.g. ['wandb'], ['tensorboard'], "
                "['trackio'], or ['none']."
            ),
        },
    )
    lora_rank: int = field(
        default=0,
        metadata={
            "help": (
                "Train a LoRA adapter (PEFT) of this rank instead "
                "of every weight; 0 trains the whole model. "
                "The run's final/ then holds only the adapter "
                "(adapter_config.json, adapter_model.safetensors) and "
                "adapter_base.json naming its base model; every "
                "route runs it (docs/training.md, 'Adapters')."
            )
        },
    )
    lora_alpha: float = field(
        default=0.0,
        metadata={
            "help": (
                "LoRA scaling numerator (the update is scaled by alpha/rank); 0: twice the rank."
            )
        },
    )
    lora_dropout: float = field(
        default=0.0, metadata={"help": "Dropout on the LoRA input, 0 to below 1."}
    )
    lora_target_modules: list[str] = field(
        default_factory=lambda: ["all-linear"],
        metadata={
            "help": (
                "Modules that get an adapter: 'all-linear' (every "
                "linear layer but the output head) or module "
                "names such as q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj."
            )
        },
    )
    evaluate_after: bool = field(
        default=False,
        metadata={
            "help": (
                "After training, score the final model on subsets "
                "of the evaluation sets and write eval.json."
            )
        },
    )
    eval_cases: int = field(
        default=20, metadata={"help": ("Cases per evaluation subset when evaluate_after is on.")}
    )

    def peft_config(self):
        """The PEFT LoraConfig these settings ask for, or None to train every weight."""
        if not self.lora_rank:
            return None
        from peft import LoraConfig

        targets = self.lora_target_modules
        return LoraConfig(
            r=self.lora_rank,
            lora_alpha=self.lora_alpha or 2 * self.lora_rank,
            lora_dropout=self.lora_dropout,
            task_type="CAUSAL_LM",
            target_modules="all-linear" if targets == ["all-linear"] else list(targets),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def check(self) -> str:
        """The first problem with the values, as ``field: what is wrong``, or ''."""
        for name in (
            "max_steps",
            "per_device_train_batch_size",
            "gradient_accumulation_steps",
            "logging_steps",
            "save_steps",
            "save_total_limit",
            "eval_cases",
        ):
            if getattr(self, name) < 1:
                return f"{name}: must be at least 1, got {getattr(self, name)}"
        if self.warmup_steps < 0:
            return f"warmup_steps: must be 0 or more, got {self.warmup_steps}"
        if not self.learning_rate > 0:
            return f"learning_rate: must be above 0, got {self.learning_rate}"
        if not self.report_to:
            return "report_to: give ['none'] or one or more trackers, e.g. ['tensorboard']"
        if self.lora_rank < 0:
            return (
                "lora_rank: must be 0 (train every weight) "
                f"or a rank of 1 or more, got {self.lora_rank}"
            )
        if self.lora_rank and self.lora_alpha < 0:
            return f"lora_alpha: must be above 0 (or 0 for twice the rank), got {self.lora_alpha}"
        if not 0.0 <= self.lora_dropout < 1.0:
            return f"lora_dropout: must be at least 0 and below 1, got {self.lora_dropout}"
        if self.lora_rank and not self.lora_target_modules:
            return "lora_target_modules: name at least one module, or 'all-linear'"
        if not 0 <= self.stop_after_steps <= self.max_steps:
            return (
                f"stop_after_steps: must be between 0 (off) and max_steps ({self.max_steps}), "
                f"got {self.stop_after_steps}"
            )
        return ""
