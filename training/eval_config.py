"""Scoring a checkpoint on held-out subsets (``python -m training eval``): one dataclass that the
CLI's flags and the studio's evaluation form are both built from, with one set of defaults, help
texts and ranges (``check()`` names the first field out of range, on the command line as in the
form).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.config_schema import to_argv
from training.self_eval import SETS

SET_LABELS = {
    "live_qa": "T1 Live-Stream QA",
    "variant_qa": "T2 Harness-Variant QA",
    "prompt_robustness": "Prompt Robustness",
    "ifeval": "Instruction following (IFEval checkers)",
}


@dataclass
class EvalConfig:
    """Scores a checkpoint on held-out subsets with the evaluation library (``python -m training
    eval``)."""

    model: str = field(
        default="tiny",
        metadata={
            "kind": "checkpoint",
            "help": (
                "Checkpoint to score: 'local' (SmolLM2-135M-Instruct), "
                "'tiny' (the test model) or the path of a "
                "checkpoint folder (a run's final/, listed in the studio's checkpoint registry)."
            ),
        },
    )
    harness: str = field(
        default="demo",
        metadata={
            "kind": "harness",
            "help": (
                "Harness the cases run under: 'demo' (the shipped "
                "livestream-avatar) or a Harness folder; the studio "
                "also takes a studio version, NAME@vN."
            ),
        },
    )
    sets: list[str] = field(
        default_factory=lambda: list(SETS),
        metadata={
            "choices": SET_LABELS,
            "help": (
                "Sets to score: live_qa (T1), variant_qa (T2, each "
                "case under an unseen HSA variant), prompt_robustness, "
                "ifeval (instruction following, lm-eval's IFEval "
                "checkers, prompt-level strict: the project's generated "
                "prompts unless the workers' HARNESS_IFEVAL_PATH "
                "names the official file; the checkpoint's base model "
                "answers the same prompts for the capability gate)."
            ),
        },
    )
    cases: int = field(
        default=100,
        metadata={"help": ("Held-out cases in T1 and T2 (Prompt Robustness takes half as many).")},
    )
    ifeval: int = field(
        default=50, metadata={"help": "Instruction-following prompts (the first N)."}
    )
    ifeval_base: bool = field(
        default=True,
        metadata={
            "help": (
                "Also score the checkpoint's base model (its model "
                "card's base_model) on the same instruction-following "
                "prompts."
            )
        },
    )

    def check(self) -> str:
        """The first problem, as ``field: what is wrong``, or ''."""
        unknown = [s for s in self.sets if s not in SETS]
        if unknown or not self.sets:
            return f"sets: choose one or more of {', '.join(SETS)}" + (
                f" (not {', '.join(unknown)})" if unknown else ""
            )
        for name in ("cases", "ifeval"):
            if not 1 <= getattr(self, name) <= 10000:
                return f"{name}: must be between 1 and 10000, got {getattr(self, name)}"
        return ""

    def argv(self, *, out: str) -> list[str]:
        """``python -m training eval`` with these settings (after ``python -m``)."""
        return ["training", "eval", *to_argv(self), "--out", out]
