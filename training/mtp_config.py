"""MTP draft-head adaptation settings: the policy frozen, the head trained on the policy's own
rollouts."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.augment.pipeline import DIMS as HSA_DIMS
from training.base_config import StageConfig


@dataclass
class MTPStageConfig(StageConfig):
    """Adapt a speculative-decoding draft head to a (trained) policy (docs/architecture.md §9)."""

    model: str = field(
        default="local",
        metadata={
            "kind": "checkpoint",
            "help": (
                "The policy the head drafts for (kept frozen): "
                "'local' (SmolLM2-135M-Instruct), 'tiny', or a "
                "checkpoint folder such as a HAT run's final/."
            ),
        },
    )
    output_dir: str = field(
        default="runs/mtp",
        metadata={
            "help": (
                "Run folder: config, rollouts/, metrics.jsonl, "
                "checkpoint-N/, final/ (the head, in the format "
                "SGLang loads) and model_card.json."
            )
        },
    )
    init_head: str = field(
        default="",
        metadata={
            "kind": "draft-head",
            "help": (
                "A head folder to start from (transplant, e.g. "
                "the base model's head onto a trained policy). "
                "Empty: a new head that starts as the policy's "
                "own next-token guess (serving.engine.draft_head)."
            ),
        },
    )
    layout: str = field(
        default="eagle",
        metadata={
            "help": (
                "Head layout: 'eagle' (what SGLang serves for "
                "Llama-family models; the default model's) or "
                "'nextn' (the NextN/MTP block with its norms, as DeepSeek-V3 and Qwen3.5 ship it)."
            )
        },
    )
    draft_steps: int = field(
        default=3,
        metadata={
            "help": (
                "K: draft steps trained (and drafted per cycle "
                "when serving; SGLang's --speculative-num-steps)."
            )
        },
    )
    step_weight_decay: float = field(
        default=1.0,
        metadata={
            "help": (
                "Weight of draft step k is decay**(k-1) "
                "(FastMTP-style; later steps count less). 1.0 = the "
                "uniform loss of docs/architecture.md §9."
            )
        },
    )
    cases: str = field(
        default="",
        metadata={
            "kind": "file",
            "help": (
                "Cases whose rollouts the head learns from "
                "(evaluation case JSONL). Empty: the synthetic "
                "world's Live-Stream QA cases that are not held out for evaluation."
            ),
        },
    )
    max_cases: int = field(default=48, metadata={"help": "Roll out at most this many cases."})
    augmented_fraction: float = field(
        default=0.5,
        metadata={
            "help": (
                "Share of rollouts run under an HSA variant of "
                "the Harness (the head then sees the prompts it "
                "will serve under edited Harnesses); the rest use the original."
            )
        },
    )
    hsa_dims: list[str] = field(
        default_factory=lambda: ["skills", "skill-content", "tools", "prompt", "hooks"],
        metadata={"choices": HSA_DIMS, "help": "HSA transformation families of the variants."},
    )
    variant_pool_size: int = field(
        default=4, metadata={"help": "HSA variants built for the rollouts."}
    )
    rollout_max_new_tokens: int = field(
        default=96,
        metadata={"help": ("Tokens the policy may write per model call during rollouts.")},
    )
    rollout_budget_s: float = field(
        default=600.0,
        metadata={
            "help": (
                "Request time budget of a rollout (replaces the "
                "Harness's, so a CPU policy finishes its answer)."
            )
        },
    )
    hot_vocab: int = field(
        default=4096,
        metadata={
            "help": (
                "Draft only among the N tokens the policy wrote "
                "most often in the rollouts (then the most "
                "frequent prompt tokens): the head's LM head "
                "shrinks from the whole vocabulary to N rows, "
                "most of a draft step's cost (SGLang: "
                "--speculative-token-map). 0: the whole vocabulary."
            )
        },
    )
    held_out: float = field(
        default=0.125,
        metadata={
            "help": (
                "Share of rollouts kept out of training to "
                "measure the head's acceptance (greedy, K steps)."
            )
        },
    )
    max_context: int = field(
        default=512,
        metadata={
            "help": (
                "Positions of each rollout sequence the head attends over (the last ones are kept)."
            )
        },
    )
    max_steps: int = field(default=300, metadata={"help": "Optimizer steps."})
    learning_rate: float = field(
        default=5e-4, metadata={"help": "Peak learning rate (AdamW, cosine decay)."}
    )
    warmup_steps: int = field(
        default=10, metadata={"help": "Linear warm-up steps of the learning rate."}
    )
    weight_decay: float = field(default=0.0, metadata={"help": "AdamW weight decay."})
    max_grad_norm: float = field(default=1.0, metadata={"help": "Gradient clipping norm."})
    per_device_train_batch_size: int = field(
        default=1, metadata={"help": "Rollout sequences per step."}
    )
    logging_steps: int = field(
        default=5, metadata={"help": "Write a metrics.jsonl row every N steps."}
    )
    save_steps: int = field(
        default=100, metadata={"help": "Save a resumable checkpoint every N steps."}
    )
    threads: int = field(default=0, metadata={"help": "torch threads (0: torch's default)."})

    def check(self) -> str:
        if problem := super().check():
            return problem
        if self.progress_dir:
            return (
                "progress_dir: the MTP stage saves its own checkpoints (head and optimizer, a few "
                "MB), commit its run folder's checkpoint-N instead; leave progress_dir ''"
            )
        from serving.engine.draft_head import LAYOUTS

        if self.layout not in LAYOUTS:
            return f"layout: {self.layout!r} is not one of {', '.join(LAYOUTS)}"
        if not 1 <= self.draft_steps <= 8:
            return f"draft_steps: {self.draft_steps} must be between 1 and 8"
        if not 0.0 < self.step_weight_decay <= 1.0:
            return f"step_weight_decay: {self.step_weight_decay} must be in (0, 1]"
        if not 0.0 <= self.augmented_fraction <= 1.0:
            return "augmented_fraction: must be between 0 and 1"
        if not 0.0 < self.held_out < 1.0:
            return f"held_out: {self.held_out} must be between 0 and 1 (exclusive)"
        if self.max_cases < 2:
            return f"max_cases: {self.max_cases} must be at least 2 (one to train on, one held out)"
        if self.hot_vocab < 0:
            return (
                f"hot_vocab: {self.hot_vocab} must be 0 (the "
                "whole vocabulary) or a number of tokens"
            )
        if self.max_context < 64:
            return f"max_context: {self.max_context} must be at least 64"
        if self.gradient_accumulation_steps != 1:
            return (
                "gradient_accumulation_steps: the MTP stage "
                "sums per_device_train_batch_size sequences "
                "per step; leave this at 1"
            )
        if self.evaluate_after:
            return (
                "evaluate_after: the MTP stage measures its head's acceptance itself (card.json); "
                "the serving benchmark measures decode speed (benchmarks/mtp.py)"
            )
        if self.gradient_checkpointing:
            return (
                "gradient_checkpointing: not used by the MTP "
                "stage (the head is one block); leave it off"
            )
        if [t for t in self.report_to if t != "none"]:
            return (
                "report_to: the MTP stage writes metrics.jsonl "
                "only (it has no transformers Trainer); "
                "use ['none']"
            )
        return ""
