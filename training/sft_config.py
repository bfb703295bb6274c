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
                "original. 0 = Fixed-Harness SFT (the baseline). randomized: K states per "
                "case per data epoch (K shuffles cut into groups)."
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
    hsa_mode: str = field(
        default="pool",
        metadata={
            "help": (
                "pool or randomized. pool: each case under the original and K of a fixed "
                "seeded pool of variants. randomized: a fresh state from the HSA generator "
                "per group of hsa_group_size cases, reseeded each data epoch "
                "(training/randomized.py; gold teacher only)."
            ),
        },
    )
    hsa_epochs: int = field(
        default=1,
        metadata={
            "help": (
                "randomized: data epochs built, each reseeded (new states) and in curriculum "
                "order; the trainer takes them in that order (one pass = every data epoch)."
            )
        },
    )
    hsa_group_size: int = field(
        default=4,
        metadata={
            "help": (
                "randomized: cases per drawn state. Smaller: more distinct states; a "
                "shared-prefix batch shares the system prompt only within a state."
            )
        },
    )
    hsa_original_share: float = field(
        default=0.2,
        metadata={"help": "randomized: share of groups kept on the original Harness (holds T1)."},
    )
    hsa_opaque_name_share: float = field(
        default=0.25,
        metadata={
            "help": (
                "randomized: share of tool and skill renames that carry no meaning (fn_q7x, t3), "
                "so a name must be read from the tool list (the envelope's opaque_name_share)."
            )
        },
    )
    hsa_curriculum: list[int] = field(
        default_factory=lambda: [1, 2, 5],
        metadata={
            "help": (
                "randomized: families composed per state in data epoch 1, 2, ... (the last "
                "repeats); [1, 2, 5] = one transformation at a time, pairs, then all five."
            )
        },
    )
    recovery_unknown_tool_share: float = field(
        default=0.05,
        metadata={
            "help": (
                "randomized: share of trajectories that first call a tool name the state lacks "
                "(the original's name where the state renamed it), get the runtime's error, "
                "then make the right call."
            )
        },
    )
    recovery_grounding_share: float = field(
        default=0.05,
        metadata={
            "help": (
                "randomized: share of trajectories that state a figure before the product tool "
                "was called, are blocked by the grounding hook, call the tool and reply."
            )
        },
    )
    recovery_stop_gate_share: float = field(
        default=0.05,
        metadata={
            "help": (
                "randomized: share of trajectories that reply before loading the reply skill "
                "and are blocked by the stop gate (kept whole with keep_retry_fraction)."
            )
        },
    )
    padding_free: bool = field(
        default=False,
        metadata={
            "help": (
                "Pack a batch's sequences into one row without padding (position ids restart "
                "per sequence; TRL's padding_free). For GPUs with flash attention; implies "
                "shared_prefix: false."
            )
        },
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
        if self.padding_free and not self.pack_turns:
            return (
                "padding_free: needs pack_turns: true (the packed sequences are cut at max_length)"
            )
        if self.hsa_mode not in ("pool", "randomized"):
            return f"hsa_mode: must be 'pool' or 'randomized', got {self.hsa_mode!r}"
        if self.hsa_mode == "randomized":
            if self.teacher != "gold":
                return "hsa_mode: 'randomized' records the gold teacher only; set teacher: gold"
            if not 1 <= self.hsa_epochs <= 99:
                return f"hsa_epochs: must be 1 to 99, got {self.hsa_epochs}"
            if not 1 <= self.hsa_group_size <= 10_000:
                return f"hsa_group_size: must be at least 1, got {self.hsa_group_size}"
            for name in (
                "hsa_original_share",
                "hsa_opaque_name_share",
                "recovery_unknown_tool_share",
                "recovery_grounding_share",
                "recovery_stop_gate_share",
            ):
                if not 0.0 <= getattr(self, name) <= 1.0:
                    return f"{name}: must be between 0 and 1, got {getattr(self, name)}"
            total = (
                self.recovery_unknown_tool_share
                + self.recovery_grounding_share
                + self.recovery_stop_gate_share
            )
            if total > 1.0:
                return f"recovery_unknown_tool_share: the three recovery shares add up to {total}"
            if any(not 1 <= int(w) <= 5 for w in self.hsa_curriculum):
                return (
                    "hsa_curriculum: each entry is a number of families from 1 to 5, "
                    f"got {self.hsa_curriculum}"
                )
            if not self.hsa_dims:
                return "hsa_dims: randomized HSA needs at least one family"
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
