"""The ablation's config (``python -m training ablation``): what it trains and scores, its sizes and
presets.

The models of Table 4 (``MODELS``), the sets they are scored on (``SET_LABELS``), the T2 step-level
judge dimensions and how requests ended; ``AblationConfig`` (one help text per field, the CLI and
the studio's form are built from it) and its presets (``cpu-small``, ``tiny-smoke``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from training.self_eval import AGENT_MAX_NEW_TOKENS

MODELS = ("base", "fixed_sft", "hsa_sft", "opd", "rl")
LABELS = {
    "base": "Base",
    "fixed_sft": "Fixed-Harness SFT",
    "hsa_sft": "HSA-SFT",
    "opd": "+ General OPD",
    "rl": "+ HSA-RL",
}
SET_LABELS = {
    "live_qa": "T1 Live-Stream QA AVG",
    "variant_qa": "T2 Harness-Variant QA AVG",
    "prompt_robustness": "Prompt Robustness AVG",
    "ifeval": "IFE-P (strict)",
}
# The judge's step-level dimensions on T2: finer than AVG, they show whether a model picks the
# variant's skills and tools before it has learned to finish a request.
STEP_DIMENSIONS = {
    "skill_selection": "Skill Selection",
    "tool_rationality": "Tool Rationality",
    "renamed_tool_called": "Renamed Tool Called",
}
# How a request ended (the runtime's trajectory outcome): a reply, the Harness's fallback reply, a
# hook's or exhausted retries' suppression (a variant may set on_exhausted: suppress), or a silent
# route.
OUTCOMES = ("replied", "fallback", "suppressed", "silent", "error")
OUTCOME_SETS = ("live_qa", "variant_qa")
# "Renamed Tool Called": of the T2 cases whose gold needs a tool that the case's variant renamed,
# the share in which the model called that tool by its new name, whatever the arguments (the judge's
# missing_tool_call code is absent). It is the measure of the planning experiment: a Fixed-
# Harness model keeps writing the memorised name.


@dataclass
class AblationConfig:
    """Sizes of one ablation run (a preset fills them; flags override)."""

    model: str = field(
        default="local",
        metadata={"kind": "checkpoint", "help": "Base model ('local' = SmolLM2-135M-Instruct)."},
    )
    output_dir: str = field(
        default="runs/ablation-cpu-small", metadata={"help": "Ablation folder."}
    )
    harness: str = field(default="demo", metadata={"kind": "harness", "help": "Harness folder."})
    train_cases: int = field(
        default=200, metadata={"help": "Training cases for SFT data and RL tasks."}
    )
    hsa_variants: int = field(default=3, metadata={"help": "HSA variants per case for HSA-SFT."})
    sft_steps: int = field(default=24, metadata={"help": "Optimizer steps of each SFT run."})
    sft_batch: int = field(default=2, metadata={"help": "Examples per SFT step."})
    sft_lr: float = field(default=1e-4, metadata={"help": "SFT learning rate."})
    sft_pack: bool = field(
        default=False, metadata={"help": "Pack each trajectory's turns in the first SFT phase."}
    )
    sft2_steps: int = field(
        default=20,
        metadata={
            "help": (
                "Steps of a second SFT phase on the same examples, "
                "turns packed, from the first phase's model "
                "(the demo checkpoint's recipe, examples/training/demo-sft-2.yaml). 0 = one phase."
            )
        },
    )
    sft2_schedule_steps: int = field(
        default=60,
        metadata={
            "help": (
                "Length of the second phase's linear learning-rate "
                "schedule; it stops after sft2_steps."
            )
        },
    )
    sft2_lr: float = field(
        default=2e-4, metadata={"help": "Peak learning rate of the second SFT phase."}
    )
    opd_steps: int = field(default=16, metadata={"help": "Optimizer steps of General OPD."})
    rl_steps: int = field(
        default=6, metadata={"help": "Optimizer steps of HSA-RL (4 rollouts each)."}
    )
    eval_cases: int = field(default=100, metadata={"help": "Held-out cases in each of T1 and T2."})
    eval_prompt_robustness: int = field(default=50, metadata={"help": "Prompt Robustness cases."})
    eval_ifeval: int = field(default=50, metadata={"help": "IFEval prompts (the first N)."})
    max_new_tokens: int = field(
        default=64,
        metadata={"help": "Tokens per IFEval answer at evaluation (the same for every model)."},
    )
    agent_max_new_tokens: int = field(
        default=AGENT_MAX_NEW_TOKENS,
        metadata={
            "help": (
                "Tokens per agent model call in T1, T2, Prompt Robustness and the RL rollouts: "
                "the cap every route serves the agent with (a round with two tool calls is "
                "about 70 tokens; a lower cap scores cut calls, not the model)."
            )
        },
    )
    resamples: int = field(default=10_000, metadata={"help": "Bootstrap resamples."})
    checkpoints: dict[str, str] = field(
        default_factory=dict,
        metadata={
            "kind": "checkpoint",
            "help": (
                "Models already trained, scored instead of trained: "
                "model -> checkpoint or adapter folder, e.g. "
                "{fixed_sft: models/demo-adapter-fixed, hsa_sft: models/demo-adapter}. The models: "
                + ", ".join(MODELS[1:])
                + "."
            ),
        },
    )
    models: list[str] = field(
        default_factory=lambda: list(MODELS),
        metadata={
            "help": (
                "The models this ablation trains and scores (base "
                "is always scored); the others stay 'pending' in "
                "the table. E.g. [base, fixed_sft, hsa_sft] for the SFT comparison alone."
            )
        },
    )

    def check(self) -> str:
        """The first problem with the sizes, as ``field: what is wrong``, or ''."""
        for name in (
            "train_cases",
            "sft_steps",
            "sft_batch",
            "opd_steps",
            "rl_steps",
            "eval_cases",
            "eval_prompt_robustness",
            "eval_ifeval",
            "max_new_tokens",
            "agent_max_new_tokens",
        ):
            if getattr(self, name) < 1:
                return f"{name}: must be at least 1, got {getattr(self, name)}"
        for name in ("hsa_variants", "sft2_steps"):
            if getattr(self, name) < 0:
                return f"{name}: must be 0 or more, got {getattr(self, name)}"
        if self.sft2_steps and self.sft2_schedule_steps < self.sft2_steps:
            return (
                f"sft2_schedule_steps: the schedule ({self.sft2_schedule_steps}) must be at least "
                f"sft2_steps ({self.sft2_steps}) long"
            )
        for name in ("sft_lr", "sft2_lr"):
            if not getattr(self, name) > 0:
                return f"{name}: must be above 0, got {getattr(self, name)}"
        unknown = sorted(set(self.models) - set(MODELS)) or sorted(
            set(self.checkpoints) - set(MODELS[1:])
        )
        if unknown:
            return (
                f"{'models' if set(unknown) - set(self.checkpoints) else 'checkpoints'}: "
                f"{', '.join(unknown)} is not one of {', '.join(MODELS)} (checkpoints: not base)"
            )
        if "rl" in self.models and "opd" not in self.models and "opd" not in self.checkpoints:
            return "models: rl trains from opd's model; add opd or give its checkpoint"
        if self.resamples < 100:
            return f"resamples: at least 100 bootstrap resamples, got {self.resamples}"
        return ""


PRESETS: dict[str, AblationConfig] = {
    "cpu-small": AblationConfig(),
    # the shipped demo adapter against its Fixed-SFT comparison and the base model
    # (docs/training.md, "The demo adapter"): nothing is trained, T1/T2 on 100 held-out cases each
    # and IFEval on 100 prompts are scored
    "demo-adapter": AblationConfig(
        output_dir="results/ablation-demo-adapter",
        models=["base", "fixed_sft", "hsa_sft"],
        checkpoints={"fixed_sft": "models/demo-adapter-fixed", "hsa_sft": "models/demo-adapter"},
        eval_ifeval=100,
        eval_prompt_robustness=50,
    ),
    # a smoke run of the whole machinery on the tiny model (minutes, numbers meaningless)
    "tiny-smoke": AblationConfig(
        model="tiny",
        output_dir="runs/ablation-tiny-smoke",
        train_cases=8,
        hsa_variants=1,
        sft_steps=2,
        sft2_steps=1,
        sft2_schedule_steps=2,
        opd_steps=2,
        rl_steps=1,
        eval_cases=3,
        eval_prompt_robustness=2,
        eval_ifeval=2,
        max_new_tokens=8,
        agent_max_new_tokens=8,
        resamples=200,
    ),
}
