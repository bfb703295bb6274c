"""Presets: a run's form filled in for a purpose, or a shipped multi-step recipe started in one
click.

A preset of ``values`` fills the form of its kind (the user may change any field before starting).
A preset of ``recipe`` files runs those shipped config files (``examples/training/``) one after the
other, exactly as their comments' commands do, with every path under the run folder: a later step
that names an earlier step's ``output_dir`` (the demo's ``model: runs/demo-sft-1/final``) is pointed
at that step's folder in this run. The files are read by the training library's one loader.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.config_schema import load_config
from training.ablation import PRESETS as ABLATION_PRESETS

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Preset:
    name: str
    kind: str
    label: str
    description: str
    values: dict[str, Any] = field(default_factory=dict)
    recipe: tuple[str, ...] = ()  # config files relative to the checkout, run in order

    @property
    def is_recipe(self) -> bool:
        return bool(self.recipe)


def _ablation_values(name: str) -> dict[str, Any]:
    values = dataclasses.asdict(ABLATION_PRESETS[name])
    del values["output_dir"]  # the studio's: RUN/ablation
    return values


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "demo-checkpoint",
            "sft",
            "Train the demo checkpoint",
            "SmolLM2-135M-Instruct, two SFT steps on the demo Harness's gold trajectories "
            "(examples/training/demo-sft-1.yaml then "
            "demo-sft-2.yaml): the smallest model measured here "
            "that answers the demo's price question end to "
            "end. About 40-50 minutes and up to 18 GB of "
            "memory on 2 CPU cores; minutes on a GPU worker.",
            recipe=("examples/training/demo-sft-1.yaml", "examples/training/demo-sft-2.yaml"),
        ),
        Preset(
            "tiny-smoke",
            "sft",
            "Smoke test on the tiny model",
            "Two SFT steps of the 2-layer random test model "
            "on two cases of the demo Harness: the command "
            "takes about 15 s on a 2-core CPU (14 s "
            "measured), most of it loading; proves a training "
            "worker, the dashboard and the registry end to end.",
            values={
                "model": "tiny",
                "max_steps": 2,
                "max_cases": 2,
                "hsa_variants": 0,
                "save_steps": 1,
                "learning_rate": 1e-3,
            },
        ),
        Preset(
            "hsa-sft",
            "sft",
            "HSA-SFT (K=3 variants per case)",
            "Stage 1 with three augmented Harness variants per training case (docs/training.md).",
            values={"hsa_variants": 3},
        ),
        Preset(
            "fixed-sft",
            "sft",
            "Fixed-Harness SFT (the baseline)",
            "Stage 1 on the original Harness only (hsa_variants 0): the ablation's baseline.",
            values={"hsa_variants": 0},
        ),
        Preset(
            "tiny-pipeline",
            "pipeline",
            "Pipeline smoke test on the tiny model",
            "SFT -> OPD -> RL, one or two steps each on the "
            "tiny model: the whole chain in a few minutes.",
            values={
                "model": "tiny",
                "sft": {"max_steps": 2, "max_cases": 2, "hsa_variants": 0, "save_steps": 1},
                "opd": {
                    "max_steps": 1,
                    "max_prompts": 4,
                    "max_completion_length": 8,
                    "save_steps": 1,
                },
                "rl": {
                    "max_steps": 1,
                    "max_cases": 2,
                    "num_generations": 2,
                    "per_device_train_batch_size": 2,
                    "max_new_tokens": 8,
                    "variant_pool_size": 1,
                    "save_steps": 1,
                },
            },
        ),
        Preset(
            "mtp-tiny",
            "mtp",
            "MTP smoke test on the tiny model",
            "A draft head for the tiny policy from the rollouts "
            "of 3 cases, 4 steps: under a minute on a CPU; "
            "proves the rollouts, the per-step curves and the head's card end to end.",
            values={
                "model": "tiny",
                "max_cases": 3,
                "max_steps": 4,
                "logging_steps": 2,
                "save_steps": 2,
                "rollout_max_new_tokens": 12,
                "variant_pool_size": 1,
                "learning_rate": 1e-3,
            },
        ),
        Preset(
            "mtp-readapt",
            "mtp",
            "Re-adapt the draft head for a checkpoint",
            "A head for a newly trained policy (the registry's "
            "link fills in the checkpoint, and as init_head "
            "the newest head of the same shape, adapted to "
            "another policy: a transplant to start from). "
            "A head made for another checkpoint is stale "
            "for this one (SGLang's launcher refuses it).",
        ),
        # the ablation's own presets (training.ablation.PRESETS), its output_dir replaced by the run
        # folder
        Preset(
            "ablation-tiny-smoke",
            "ablation",
            "Ablation smoke test on the tiny model (tiny-smoke)",
            "The whole Table-4 machinery on the tiny random model: "
            "six short trainings and 26 small scoring steps, "
            "under a minute on 2 CPU cores (44 s measured); "
            "the numbers mean nothing, the table and its "
            "intervals are real.",
            values=_ablation_values("tiny-smoke"),
        ),
        Preset(
            "ablation-cpu-small",
            "ablation",
            "Ablation on the default model (cpu-small)",
            "Table 4 on SmolLM2-135M-Instruct as docs/training.md "
            "reports it: hours on a CPU worker, resumable "
            "step by step (Resume runs the steps not yet done).",
            values=_ablation_values("cpu-small"),
        ),
        Preset(
            "eval-quick",
            "eval",
            "Quick evaluation (10 cases per set)",
            "T1, T2 and Prompt Robustness on 10 held-out cases and IFEval on 5 prompts.",
            values={"cases": 10, "ifeval": 5},
        ),
        Preset(
            "replay-tiny",
            "replay",
            "Replay smoke test on the tiny route",
            "The tiny model on the CPU engine, concurrency "
            "1 and 2, 1 warm-up and 2 measured cases each.",
            values={
                "route": "cpu-engine-tiny",
                "concurrency": [1, 2],
                "warmup": 1,
                "measured": 2,
                "max_tokens": 16,
            },
        ),
    )
}


def presets_for(kind: str) -> list[Preset]:
    return [p for p in PRESETS.values() if p.kind == kind]


def preset_config(preset: Preset, cls: type) -> Any:
    """The config a values preset fills the form with (nested sections for the pipeline)."""
    config = cls()
    values = dict(preset.values)
    for name, value in list(values.items()):
        if isinstance(value, dict) and dataclasses.is_dataclass(getattr(config, name, None)):
            values[name] = dataclasses.replace(getattr(config, name), **value)
    return dataclasses.replace(config, **values)


def recipe_steps(preset: Preset, cls: type, *, folder: Path) -> list[tuple[str, Any]]:
    """(step name, config) per recipe file, every run path moved under ``folder``."""
    steps: list[tuple[str, Any]] = []
    moved: dict[str, str] = {}  # the recipe's own output_dir -> this run's folder for that step
    for relative in preset.recipe:
        config = load_config(cls, ROOT / relative)
        name = Path(config.output_dir).name
        target = str(folder / name)
        changes = {}
        for f in dataclasses.fields(config):
            value = getattr(config, f.name)
            if isinstance(value, str):
                for old, new in moved.items():
                    if value == old or value.startswith(old.rstrip("/") + "/"):
                        changes[f.name] = new + value[len(old.rstrip("/")) :]
        changes["output_dir"] = target
        changes["resume"] = True
        moved[config.output_dir] = target
        steps.append((name, dataclasses.replace(config, **changes)))
    return steps
