"""Stage 2 settings: General On-Policy Distillation to the frozen base model."""

from __future__ import annotations

from dataclasses import dataclass, field

from training.base_config import StageConfig


@dataclass
class OPDStageConfig(StageConfig):
    """The student samples on general prompts and minimises reverse KL to the frozen base model."""

    teacher: str = field(
        default="base",
        metadata={
            "kind": "checkpoint",
            "aliases": ("base",),
            "help": (
                "The frozen model to distil towards: 'base' (the "
                "base model the student descends from, read from "
                "the model card chain), 'local', 'tiny' or a checkpoint folder."
            ),
        },
    )
    prompts: str = field(
        default="builtin",
        metadata={
            "kind": "prompts",
            "help": (
                "General-domain prompts: 'builtin' (the project's "
                "set of writing, reasoning, formatting, "
                "summarisation and chit-chat prompts), a local "
                "JSONL/JSON/Parquet file or folder with a 'prompt' "
                "or 'messages' column, or a datasets hub name such "
                "as allenai/tulu-3-sft-mixture where a hub is "
                "reachable."
            ),
        },
    )
    prompts_split: str = field(
        default="train", metadata={"help": "Split to read from a hub dataset."}
    )
    max_prompts: int = field(
        default=400, metadata={"help": "Use at most this many prompts (shuffled by seed)."}
    )
    beta: float = field(
        default=1.0,
        metadata={
            "help": (
                "Generalised JSD interpolation: 1.0 = reverse "
                "KL (the HAT recipe), 0.0 = forward KL."
            )
        },
    )
    max_completion_length: int = field(
        default=96, metadata={"help": "Tokens the student samples per prompt."}
    )
    temperature: float = field(default=1.0, metadata={"help": "Student sampling temperature."})
    shared_prefix: bool = field(
        default=True,
        metadata={
            "help": (
                "Encode the tokens every sequence of a batch starts "
                "with once, for the student and the teacher: the "
                "same loss and gradients as the plain path. Prompts "
                "of different lengths are left-padded and share "
                "no start, so such batches run the plain path "
                "(docs/training.md, 'Shared-prefix batches')."
            )
        },
    )
    learning_rate: float = field(default=1e-5, metadata={"help": "Peak learning rate (AdamW)."})

    def check(self) -> str:
        if problem := super().check():
            return problem
        if self.max_prompts < 1:
            return f"max_prompts: must be at least 1, got {self.max_prompts}"
        if not 0.0 <= self.beta <= 1.0:
            return "beta: must be between 0 (forward KL) and 1 (reverse KL)"
        if self.max_completion_length < 1:
            return "max_completion_length: must be at least 1"
        return ""
