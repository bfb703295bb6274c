"""The three-stage pipeline's settings: one section per stage, chained through their final
models."""

from __future__ import annotations

from dataclasses import dataclass, field

from training.base_config import TRACKERS
from training.opd_config import OPDStageConfig
from training.rl_config import RLStageConfig
from training.sft_config import SFTStageConfig

STAGES = {"sft": "sft: HSA-SFT", "opd": "opd: General OPD", "rl": "rl: HSA-RL"}


@dataclass
class PipelineConfig:
    """HSA-SFT -> General OPD -> HSA-RL; each stage starts from the previous stage's final model."""

    model: str = field(
        default="local",
        metadata={
            "kind": "checkpoint",
            "help": "Base model of stage 1 (and OPD's frozen teacher).",
        },
    )
    output_dir: str = field(
        default="runs/hat-pipeline",
        metadata={
            "help": (
                "Pipeline folder; stages run in <output_dir>/sft, "
                "/opd, /rl. A finished stage is skipped on re-run, "
                "an unfinished one resumes from its last checkpoint."
            )
        },
    )
    harness: str = field(
        default="demo",
        metadata={"kind": "harness", "help": "Harness folder every stage trains under."},
    )
    stages: list[str] = field(
        default_factory=lambda: ["sft", "opd", "rl"],
        metadata={
            "choices": STAGES,
            "help": ("Stages to run, in order (a subset of sft, opd, rl)."),
        },
    )
    report_to: list[str] = field(
        default_factory=lambda: ["none"],
        metadata={
            "choices": TRACKERS,
            "help": ("Trackers for every stage (overrides the sections' report_to)."),
        },
    )
    sft: SFTStageConfig = field(
        default_factory=SFTStageConfig, metadata={"help": "Stage 1 settings."}
    )
    opd: OPDStageConfig = field(
        default_factory=OPDStageConfig, metadata={"help": "Stage 2 settings."}
    )
    rl: RLStageConfig = field(default_factory=RLStageConfig, metadata={"help": "Stage 3 settings."})

    def check(self) -> str:
        if not self.stages:
            return "stages: choose at least one of sft, opd, rl"
        unknown = [s for s in self.stages if s not in ("sft", "opd", "rl")]
        if unknown:
            return f"stages: unknown stage(s) {', '.join(unknown)}; valid: sft, opd, rl"
        return ""
