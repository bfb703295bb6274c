"""Stage 1 settings: HSA-SFT (and Fixed-Harness SFT with ``hsa_variants: 0``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.augment.pipeline import DIMS as HSA_DIMS
from training.base_config import StageConfig


@dataclass
class SFTStageConfig(StageConfig):
    """Supervised fine-tuning on judged teacher trajectories under original and augmented
    Harnesses."""

    examples: str = field(
        default="",
        metadata={
            "kind": "file",
            "help": (
                "A prebuilt examples JSONL (prompt/completion "
                "chat messages, from `python -m training data`). "
                "When empty, examples are built from `cases` with the settings below."
            ),
        },
    )
    cases: str = field(
        default="",
        metadata={
            "kind": "file",
            "help": (
                "Training cases (the evaluation case JSONL format). Empty: the synthetic world's "
                "Live-Stream QA cases that are not held out for evaluation."
            ),
        },
    )
    max_cases: int = field(default=200, metadata={"help": "Use at most this many training cases."})
    hsa_variants: int = field(
        default=3,
        metadata={
            "help": (
                "K augmented Harness variants per case besides the "
                "original. 0 = Fixed-Harness SFT (the baseline)."
            )
        },
    )
    hsa_pool: int = field(
        default=0,
        metadata={
            "help": (
                "Variants in the seeded pool each case's K variants are drawn from (variant seeds "
                "seed*1000 .. seed*1000+pool-1). 0: 2K, at least "
                "4. A larger pool shows the model more Harness "
                "states; each variant runs one agent (with its "
                "MCP server process) while the data is built."
            )
        },
    )
    hsa_dims: list[str] = field(
        default_factory=lambda: ["skills", "skill-content", "tools", "prompt", "hooks"],
        metadata={"choices": HSA_DIMS, "help": "HSA transformation families to apply."},
    )
    teacher: str = field(
        default="gold",
        metadata={
            "kind": "teacher",
            "help": (
                "Teacher policy: 'gold' (offline: the case's gold "
                "trajectory replayed under each variant, remapped "
                "by the HSA mapping, labelled teacher=gold-replay) or 'openai:BASE_URL:MODEL' (any "
                "OpenAI-compatible model run through the runtime)."
            ),
        },
    )
    min_accuracy: float = field(
        default=1.0,
        metadata={
            "help": (
                "Rejection sampling: keep trajectories whose "
                "judged Accuracy is at least this (0 or 1)."
            )
        },
    )
    min_effectiveness: float = field(
        default=0.5,
        metadata={
            "help": (
                "Rejection sampling: keep trajectories whose "
                "judged Effectiveness is at least this (0, 0.5, 1)."
            )
        },
    )
    keep_retry_fraction: float = field(
        default=0.1,
        metadata={
            "help": (
                "Fraction of trajectories with hook-triggered "
                "retries kept whole (failed attempt + hook message), "
                "so the model learns to recover; the rest have "
                "the failed attempt and hook messages removed."
            )
        },
    )
    max_length: int = field(
        default=4096,
        metadata={
            "help": (
                "Longest prompt+completion in tokens. Examples are "
                "cut at the end (TRL keeps the start), so a limit "
                "below the longest example cuts its completion, "
                "and TRL then drops it as fully masked; the demo "
                "Harness's per-turn examples are about 1,600-3,100 tokens with SmolLM2's tokenizer."
            )
        },
    )
    pack_turns: bool = field(
        default=True,
        metadata={
            "help": (
                "Train the turns of one trajectory as one sequence "
                "when each turn's context extends the previous "
                "one: the same trained tokens with the same contexts, "
                "without repeating the shared prefix (on the "
                "demo Harness's gold data 1.8x fewer tokens "
                "per epoch). false: one sequence per turn."
            )
        },
    )
    shared_prefix: bool = field(
        default=True,
        metadata={
            "help": (
                "Form each batch from sequences of the same Harness "
                "state and encode the prefix they share (the "
                "system prompt, about 1,350 tokens on the demo "
                "Harness) once per batch instead of once per sequence: "
                "the same loss and gradients as the plain path, "
                "fewer tokens through the model. A batch that shares "
                "too little runs the plain path (docs/training.md, 'Shared-prefix batches')."
            )
        },
    )
    learning_rate: float = field(default=5e-5, metadata={"help": "Peak learning rate (AdamW)."})
    eval_fraction: float = field(
        default=0.0,
        metadata={
            "help": (
                "Share of the training cases held out for an evaluation "
                "loss (eval_loss in metrics.jsonl), split by "
                "case so every turn of a trajectory, and every "
                "Harness variant of its case, sits on one side only. "
                "0 = off (all examples train)."
            )
        },
    )
    eval_steps: int = field(
        default=0,
        metadata={
            "help": (
                "With eval_fraction above 0: compute the held-out "
                "loss every N steps. 0 = at each save (every "
                "save_steps), so every kept checkpoint has "
                "an eval_loss and the best one can be told."
            )
        },
    )

    def check(self) -> str:
        if problem := super().check():
            return problem
        if self.max_cases < 1:
            return f"max_cases: must be at least 1, got {self.max_cases}"
        if self.max_length < 16:
            return f"max_length: must be at least 16 tokens, got {self.max_length}"
        if self.hsa_variants < 0:
            return "hsa_variants: must be 0 (Fixed-Harness SFT) or more"
        if self.hsa_pool < 0 or (self.hsa_pool and self.hsa_pool < self.hsa_variants):
            return (
                f"hsa_pool: must be 0 (2 x hsa_variants) or at least hsa_variants "
                f"({self.hsa_variants}), got {self.hsa_pool}"
            )
        if not 0.0 <= self.keep_retry_fraction <= 1.0:
            return "keep_retry_fraction: must be between 0 and 1"
        if self.min_accuracy not in (0.0, 1.0):
            return "min_accuracy: Accuracy is binary; use 0 or 1"
        if self.min_effectiveness not in (0.0, 0.5, 1.0):
            return "min_effectiveness: Effectiveness is 0, 0.5 or 1"
        if not 0.0 <= self.eval_fraction < 1.0:
            return (
                f"eval_fraction: must be at least 0 (off) and below 1 (some cases must train), "
                f"got {self.eval_fraction}"
            )
        if self.eval_steps < 0:
            return f"eval_steps: must be 0 (at each save) or more, got {self.eval_steps}"
        if self.eval_steps and not self.eval_fraction:
            return (
                "eval_steps: evaluates the held-out cases; "
                "set eval_fraction above 0 to hold some out"
            )
        return ""
