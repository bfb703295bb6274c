"""Stage 3 settings: HSA-RL with GRPO (GDPO aggregation, GSPO ratios) in the live-room simulator."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.augment.pipeline import DIMS as HSA_DIMS
from training.base_config import StageConfig

REWARD_NAMES = ("accuracy", "effectiveness", "tool_rationality", "skill_selection", "cot_length")


@dataclass
class RLStageConfig(StageConfig):
    """GRPO whose rollouts run the project's runtime under original and augmented Harnesses."""

    cases: str = field(
        default="",
        metadata={
            "kind": "file",
            "help": (
                "RL task cases (the evaluation case JSONL format). "
                "Empty: the synthetic world's Live-Stream QA "
                "cases that are not held out for evaluation."
            ),
        },
    )
    max_cases: int = field(default=200, metadata={"help": "Use at most this many RL tasks."})
    augmented_fraction: float = field(
        default=0.5,
        metadata={
            "help": (
                "Share of rollouts run under an augmented Harness "
                "(HSA); the rest use the original Harness."
            )
        },
    )
    hsa_dims: list[str] = field(
        default_factory=lambda: ["skills", "skill-content", "tools", "prompt", "hooks"],
        metadata={
            "choices": HSA_DIMS,
            "help": "HSA transformation families for the augmented rollouts.",
        },
    )
    variant_pool_size: int = field(
        default=4,
        metadata={
            "help": ("HSA variants built (each with its own agent) for the augmented rollouts.")
        },
    )
    trajectory_budget_s: float = field(
        default=600.0,
        metadata={
            "help": (
                "Request time budget during rollouts, replacing "
                "the Harness's (set for a served GPU model); "
                "a CPU model that needs longer would otherwise learn from fallback replies only."
            )
        },
    )
    max_rounds: int = field(
        default=0, metadata={"help": "Round limit of rollouts; 0 = the Harness's max_rounds."}
    )
    failure_rate: float = field(
        default=0.1,
        metadata={
            "help": (
                "Per tool call probability of an injected failure "
                "(timeout, malformed result or permission "
                "denied, in equal parts) during rollouts."
            )
        },
    )
    num_generations: int = field(
        default=4, metadata={"help": "Rollouts per task (the GRPO group size)."}
    )
    max_new_tokens: int = field(
        default=96, metadata={"help": "Tokens the policy may write per model call."}
    )
    temperature: float = field(
        default=1.0, metadata={"help": "Sampling temperature of the rollouts."}
    )
    top_p: float = field(default=0.95, metadata={"help": "Nucleus sampling of the rollouts."})
    beta: float = field(
        default=0.01,
        metadata={
            "help": (
                "KL penalty coefficient to the reference "
                "(starting) model; 0 disables the reference model."
            )
        },
    )
    epsilon: float = field(
        default=3e-4,
        metadata={
            "help": (
                "Clipping range of the sequence-level importance ratio (GSPO uses a small range)."
            )
        },
    )
    reward_weights: dict[str, float] = field(
        default_factory=lambda: {
            "accuracy": 1.0,
            "effectiveness": 1.0,
            "tool_rationality": 1.0,
            "skill_selection": 1.0,
            "cot_length": 0.1,
        },
        metadata={
            "help": (
                "Weight per reward dimension after per-group normalisation (GDPO). Dimensions: "
                + ", ".join(REWARD_NAMES)
                + "."
            )
        },
    )
    drop_zero_advantage: bool = field(
        default=True,
        metadata={
            "help": (
                "Drop samples whose advantage is zero before "
                "the update (they carry no learning signal)."
            )
        },
    )
    shared_prefix: bool = field(
        default=True,
        metadata={
            "help": (
                "Run a GRPO group's rollouts under one Harness "
                "state (drawn per group rather than per rollout, so "
                "augmented_fraction holds over groups) and encode "
                "the prompt they share once per batch, for the "
                "policy and the reference model: the same loss and "
                "gradients for a batch as the plain path. A batch "
                "holding more than one group shares only what their "
                "prompts share; too little runs the plain path "
                "(docs/training.md, 'Shared-prefix batches')."
            )
        },
    )
    learning_rate: float = field(default=1e-6, metadata={"help": "Peak learning rate (AdamW)."})
    per_device_train_batch_size: int = field(
        default=4,
        metadata={"help": ("Rollouts per optimizer step (a multiple of num_generations).")},
    )

    def check(self) -> str:
        if problem := super().check():
            return problem
        for name in ("max_cases", "max_new_tokens"):
            if getattr(self, name) < 1:
                return f"{name}: must be at least 1, got {getattr(self, name)}"
        if self.variant_pool_size < 0 or self.max_rounds < 0:
            name = "variant_pool_size" if self.variant_pool_size < 0 else "max_rounds"
            return f"{name}: must be 0 or more, got {getattr(self, name)}"
        if not self.trajectory_budget_s > 0:
            return f"trajectory_budget_s: must be above 0, got {self.trajectory_budget_s}"
        if not 0.0 <= self.augmented_fraction <= 1.0:
            return "augmented_fraction: must be between 0 and 1"
        if not 0.0 <= self.failure_rate <= 1.0:
            return "failure_rate: must be between 0 and 1"
        if self.num_generations < 2:
            return "num_generations: GRPO needs at least 2 rollouts per task"
        unknown = sorted(set(self.reward_weights) - set(REWARD_NAMES))
        if unknown:
            return (
                "reward_weights: unknown dimension(s) "
                f"{', '.join(unknown)}; valid: {', '.join(REWARD_NAMES)}"
            )
        if (
            self.per_device_train_batch_size * self.gradient_accumulation_steps
        ) % self.num_generations:
            return (
                "per_device_train_batch_size x gradient_accumulation_steps must be a multiple of "
                f"num_generations ({self.num_generations})"
            )
        return ""
