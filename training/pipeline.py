"""Running HSA-SFT -> General OPD -> HSA-RL as one resumable pipeline."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from harness.config_schema import dump_config
from training.pipeline_config import PipelineConfig
from training.runs import final_model_dir, is_finished


def stage_dirs(config: PipelineConfig) -> dict[str, Path]:
    root = Path(config.output_dir)
    return {stage: root / stage for stage in ("sft", "opd", "rl")}


def run_pipeline(config: PipelineConfig) -> Path:
    """Run the configured stages in order; returns the last stage's final model folder."""
    from training.opd_trainer import run_opd
    from training.rl_trainer import run_rl
    from training.sft_trainer import run_sft

    root = Path(config.output_dir)
    root.mkdir(parents=True, exist_ok=True)
    dump_config(config, root / "pipeline_config.json")
    runners = {
        "sft": (config.sft, run_sft),
        "opd": (config.opd, run_opd),
        "rl": (config.rl, run_rl),
    }
    model = config.model
    dirs = stage_dirs(config)
    for stage in config.stages:
        section, run = runners[stage]
        stage_config = dataclasses.replace(
            section,
            model=model,
            output_dir=str(dirs[stage]),
            harness=config.harness,
            report_to=config.report_to,
        )
        if not is_finished(dirs[stage]):
            run(stage_config)
        model = str(final_model_dir(dirs[stage]))
    (root / "pipeline_state.json").write_text(
        json.dumps({"final_model": model, "stages": config.stages}, indent=2) + "\n",
        encoding="utf-8",
    )
    return Path(model)
