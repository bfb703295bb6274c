"""The CPU-scale ablation of Table 4: Base, Fixed-Harness SFT, HSA-SFT, + General OPD, + HSA-RL.

``python -m training ablation --preset cpu-small`` trains the four checkpoints
on the default model (each SFT cell in two phases, the demo checkpoint's
recipe) and scores all five on held-out Live-Stream QA (T1) and
Harness-Variant QA (T2) subsets, Prompt Robustness and an IFEval subset, then
writes ``table.md`` / ``table.json`` with paired-bootstrap intervals against the
Base model and for the two target comparisons (HSA-SFT vs Fixed-Harness SFT on
T2; the full pipeline vs Base on IFEval).

It is a list of steps run in an order that answers the main question first
(both SFT variants, then their T2 scores). Every step is resumable: training
resumes from its last checkpoint, evaluation from its per-item JSONL, and a
finished step is skipped. ``steps.json`` records each step's wall time; the
table is rewritten after every step, with "pending" where nothing is scored yet.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from harness.config_schema import dump_config
from training.ablation_config import (
    LABELS,
    MODELS,
    OUTCOME_SETS,
    OUTCOMES,
    PRESETS,
    SET_LABELS,
    STEP_DIMENSIONS,
    AblationConfig,
)
from training.ablation_table import AblationTable, item_scores
from training.opd_config import OPDStageConfig
from training.rl_config import RLStageConfig
from training.runs import final_model_dir, is_finished, update_json
from training.sft_config import SFTStageConfig

# the config and the table live beside this runner (ablation_config.py, ablation_table.py); their
# names stay importable from here
__all__ = [
    "LABELS",
    "MODELS",
    "OUTCOMES",
    "OUTCOME_SETS",
    "PRESETS",
    "SET_LABELS",
    "STEP_DIMENSIONS",
    "Ablation",
    "AblationConfig",
    "AblationTable",
    "item_scores",
    "read_ablation",
    "run_ablation",
]


#: Config fields a resumed ablation may change: none of them changes a finished step.
RESUMABLE_CHANGES = ("output_dir", "models", "resamples")


class Ablation(AblationTable):
    """The ablation's steps (train, then score each model on each set), run in order and resumable;
    the table half is ``AblationTable``."""

    def __init__(self, config: AblationConfig) -> None:
        self.config = config
        self.root = Path(config.output_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self.steps_path = self.root / "steps.json"
        self.steps: dict[str, Any] = (
            json.loads(self.steps_path.read_text()) if self.steps_path.is_file() else {}
        )
        # built on first use by _renamed_tool_cases
        self._renamed: dict[str, set[str]] | None = None

    # -- models ------------------------------------------------------------------------------
    def model_dir(self, name: str) -> Path:
        if name in self.config.checkpoints:  # trained elsewhere: scored, not trained
            from harness.checkpoints import resolve_checkpoint

            return resolve_checkpoint(self.config.checkpoints[name])
        if name == "base":
            from harness.checkpoints import resolve_checkpoint

            return resolve_checkpoint(self.config.model)
        if name in ("fixed_sft", "hsa_sft") and self.config.sft2_steps:
            return final_model_dir(self.root / f"{name}_2")
        return final_model_dir(self.root / name)

    def _common(self) -> dict[str, Any]:
        return {
            "harness": self.config.harness,
            "save_steps": 5,
            "save_total_limit": 1,
            "logging_steps": 1,
        }

    def _sft(self, name: str, variants: int) -> None:
        from training.sft_trainer import run_sft

        c = self.config
        run_sft(
            SFTStageConfig(
                model=c.model,
                output_dir=str(self.root / name),
                max_cases=c.train_cases,
                hsa_variants=variants,
                max_steps=c.sft_steps,
                per_device_train_batch_size=c.sft_batch,
                learning_rate=c.sft_lr,
                max_length=4096,
                pack_turns=c.sft_pack,
                **self._common(),
            )
        )

    def _sft2(self, name: str) -> None:
        """The second SFT phase: the first phase's model and examples, turns packed, a higher
        learning rate on a longer schedule stopped early (at 135M parameters one phase either
        under-trains or collapses onto a memorised reply; docs/training.md)."""
        from training.sft_trainer import run_sft

        c = self.config
        first = self.root / name
        run_sft(
            SFTStageConfig(
                model=str(final_model_dir(first)),
                examples=str(first / "examples.jsonl"),
                output_dir=str(self.root / f"{name}_2"),
                hsa_variants=0 if name == "fixed_sft" else c.hsa_variants,
                pack_turns=True,
                max_steps=c.sft2_schedule_steps,
                stop_after_steps=c.sft2_steps,
                per_device_train_batch_size=c.sft_batch,
                learning_rate=c.sft2_lr,
                max_length=4096,
                seed=1,
                gradient_checkpointing=True,
                **{**self._common(), "save_steps": c.sft2_steps},
            )
        )

    def _opd(self) -> None:
        from training.opd_trainer import run_opd

        c = self.config
        run_opd(
            OPDStageConfig(
                model=str(self.model_dir("hsa_sft")),
                output_dir=str(self.root / "opd"),
                max_steps=c.opd_steps,
                per_device_train_batch_size=2,
                max_completion_length=64,
                **self._common(),
            )
        )

    def _rl(self) -> None:
        from training.rl_trainer import run_rl

        c = self.config
        run_rl(
            RLStageConfig(
                model=str(self.model_dir("opd")),
                output_dir=str(self.root / "rl"),
                max_cases=c.train_cases,
                max_steps=c.rl_steps,
                num_generations=4,
                per_device_train_batch_size=4,
                max_new_tokens=c.agent_max_new_tokens,
                top_p=1.0,
                trajectory_budget_s=120.0,
                gradient_checkpointing=True,
                **{**self._common(), "save_steps": 1},
            )
        )

    # -- steps -------------------------------------------------------------------------------
    def plan(self) -> list[tuple[str, Any]]:
        """Training and scoring steps, ordered so that both targets are answered as early as
        possible: the two SFT runs and their T2 scores, Base's IFEval, then OPD and RL and the full
        pipeline's IFEval; the remaining cells of the table after that."""

        def ev(model: str, set_name: str) -> tuple[str, Any]:
            return f"eval:{model}:{set_name}", self._eval_step(model, set_name)

        steps = [
            ("train:fixed_sft", lambda: self._sft("fixed_sft", 0)),
            ("train:hsa_sft", lambda: self._sft("hsa_sft", self.config.hsa_variants)),
            *(
                [
                    ("train:fixed_sft_2", lambda: self._sft2("fixed_sft")),
                    ("train:hsa_sft_2", lambda: self._sft2("hsa_sft")),
                ]
                if self.config.sft2_steps
                else []
            ),
            ev("fixed_sft", "variant_qa"),
            ev("hsa_sft", "variant_qa"),
            ev("base", "ifeval"),
            ("train:opd", self._opd),
            ("train:rl", self._rl),
            ev("rl", "ifeval"),
            ev("base", "variant_qa"),
            ev("opd", "variant_qa"),
            ev("rl", "variant_qa"),
            *[ev(m, "live_qa") for m in ("base", "fixed_sft", "hsa_sft", "opd", "rl")],
            *[ev(m, "ifeval") for m in ("fixed_sft", "hsa_sft", "opd")],
            *[ev(m, "prompt_robustness") for m in MODELS],
        ]
        return [(name, step) for name, step in steps if self._planned(name)]

    def _planned(self, step: str) -> bool:
        """A step of a model this ablation covers (``models``) that is not given as a checkpoint."""
        kind, rest = step.split(":", 1)
        model = rest.split(":")[0].removesuffix("_2")
        if kind == "train":
            return model in self.config.models and model not in self.config.checkpoints
        return model == "base" or model in self.config.models

    def _eval_step(self, model: str, set_name: str):
        def run() -> None:
            from training.self_eval import evaluate_model
            from training.stage_common import resolve_harness_dir

            c = self.config
            evaluate_model(
                model_dir=self.model_dir(model),
                out_dir=self.root / "eval" / model,
                harness_dir=resolve_harness_dir(c.harness),
                sets=(set_name,),
                n_cases=c.eval_cases,
                n_prompt_robustness=c.eval_prompt_robustness,
                n_ifeval=c.eval_ifeval,
                max_new_tokens=c.max_new_tokens,
                agent_max_new_tokens=c.agent_max_new_tokens,
            )

        return run

    def _step_done(self, name: str) -> bool:
        if name.startswith("train:"):
            return is_finished(self.root / name.split(":", 1)[1])
        return bool(self.steps.get(name, {}).get("done"))

    def run(self, *, only_table: bool = False, only_steps: tuple[str, ...] = ()) -> dict[str, Any]:
        """Run every step not yet done, in plan order; ``only_steps`` limits it to the steps named
        (two processes can then run independent steps side by side, e.g. two evaluations on two
        cores)."""
        plan = self.plan()
        unknown = sorted(set(only_steps) - {name for name, _ in plan})
        if unknown:
            raise ValueError(
                f"unknown ablation step(s) {', '.join(unknown)}; valid: "
                + ", ".join(name for name, _ in plan)
            )
        self.check_resume()
        dump_config(self.config, self.root / "ablation_config.json")
        if not only_table:
            for name, step in plan:
                if (only_steps and name not in only_steps) or self._step_done(name):
                    continue
                started = time.perf_counter()
                print(f"[ablation] {name} ...", flush=True)
                step()
                elapsed = time.perf_counter() - started
                self._record(name, elapsed)
                print(f"[ablation] {name} done in {elapsed:.0f} s", flush=True)
                self.write_table()
        return self.write_table()

    def check_resume(self) -> None:
        """Refuse to add steps to a folder whose finished steps ran with other settings (its
        ablation_config.json): a resumed step would be scored beside them as if they were alike.
        Fields that change no finished step (the folder, the models to run, the bootstrap) may
        differ; a field the folder's file does not name is not compared."""
        path = self.root / "ablation_config.json"
        if not path.is_file() or not any(self._step_done(name) for name, _ in self.plan()):
            return
        saved = json.loads(path.read_text(encoding="utf-8"))
        current = dataclasses.asdict(self.config)
        differ = [
            f"{name}: {saved[name]!r} there, {current[name]!r} now"
            for name in current
            if name not in RESUMABLE_CHANGES and name in saved and saved[name] != current[name]
        ]
        if differ:
            raise ValueError(
                f"{self.root}: its finished steps ran with other settings ({'; '.join(differ)}); "
                "give the folder's settings to resume it, or another --output-dir for these"
            )

    def _record(self, name: str, elapsed: float) -> None:
        """Add a finished step to steps.json under a lock, re-reading it first, so that steps
        finished by another process running side by side are kept."""

        def add(steps: dict[str, Any]) -> None:
            steps[name] = {"done": True, "wall_s": steps.get(name, {}).get("wall_s", 0.0) + elapsed}

        self.steps = update_json(self.steps_path, add)

    def step_states(self) -> list[dict[str, Any]]:
        """Every step of the plan, in order: its name, whether it is done and its wall time
        (steps.json)."""
        return [
            {
                "name": name,
                "done": self._step_done(name),
                "wall_s": self.steps.get(name, {}).get("wall_s"),
            }
            for name, _ in self.plan()
        ]


def read_ablation(folder: str | Path) -> dict[str, Any] | None:
    """What an ablation folder holds, rebuilt from its files by the code that writes table.md: the
    config it ran with (ablation_config.json), the table's data (``Ablation.table``), every step of
    the plan with its state, and the Markdown. None when the folder holds no ablation yet."""
    from harness.config_schema import config_from_dict

    config_path = Path(folder) / "ablation_config.json"
    if not config_path.is_file():
        return None
    config = config_from_dict(
        AblationConfig, json.loads(config_path.read_text(encoding="utf-8")), source=str(config_path)
    )
    ablation = Ablation(dataclasses.replace(config, output_dir=str(folder)))
    table = ablation.table()
    return {
        "config": dataclasses.asdict(ablation.config),
        "table": table,
        "steps": ablation.step_states(),
        "markdown": ablation.markdown(table),
    }


def run_ablation(
    config: AblationConfig,
    *,
    only_table: bool = False,
    only_steps: tuple[str, ...] = (),
    include_partial: bool = False,
) -> dict[str, Any]:
    """Run the ablation's steps (or only its table); ``include_partial`` (with ``only_table``)
    counts unfinished evaluations in the table, marked partial."""
    ablation = Ablation(config)
    ablation.include_partial = include_partial and only_table
    return ablation.run(only_table=only_table, only_steps=only_steps)
