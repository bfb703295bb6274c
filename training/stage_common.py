"""What every stage does around its TRL trainer: run folder, model paths, resume, model card.

The trainers themselves (``sft_trainer.py``, ``opd_trainer.py``, ``rl_trainer.py``)
stay readable top to bottom; this module holds the few steps they share.
"""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config_schema import dump_config
from training.base_config import StageConfig
from training.runs import (
    ModelCard,
    base_model_of,
    checkpoint_step,
    export_progress,
    final_model_dir,
    import_progress,
    last_checkpoint,
    read_progress,
)


def resolve_harness_dir(name: str) -> Path:
    """'demo' -> the shipped demo Harness, else a folder."""
    from harness import demo_harness_dir

    if name in ("", "demo"):
        return demo_harness_dir()
    path = Path(name).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(
            f"harness: {name!r} is not a folder; use 'demo' or a Harness folder"
        )
    return path


def resolve_model(name: str) -> Path:
    from harness.checkpoints import resolve_checkpoint

    return resolve_checkpoint(name)


@dataclass
class StageRun:
    """One stage's run folder and the facts its model card needs."""

    run_dir: Path
    stage: str
    model_dir: Path
    started: float
    resume_from: str | None
    stop_after_steps: int = 0
    progress_dir: str = ""
    #: the progress folder's facts when its checkpoint is further on than the run's own: copied in
    #: and resumed from by ``train`` (after ``check_data``, so a refused run copies nothing)
    progress: dict[str, Any] | None = None

    @property
    def final_dir(self) -> Path:
        return final_model_dir(self.run_dir)

    def common_trainer_args(self, config: StageConfig) -> dict[str, Any]:
        """Arguments every TRL config of ours takes from a ``StageConfig``."""
        return dict(
            output_dir=str(self.run_dir),
            max_steps=config.max_steps,
            learning_rate=config.learning_rate,
            per_device_train_batch_size=config.per_device_train_batch_size,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
            warmup_steps=config.warmup_steps,
            logging_steps=config.logging_steps,
            save_strategy="steps",
            save_steps=config.save_steps,
            save_total_limit=config.save_total_limit,
            seed=config.seed,
            data_seed=config.seed,
            report_to=config.report_to,
            **checkpointing_args(config.gradient_checkpointing),
            bf16=_bf16_accelerator(),
            dataloader_num_workers=0,
            disable_tqdm=True,
            include_num_input_tokens_seen="all",
            use_cpu=not _has_accelerator(),
        )

    def train(self, trainer) -> None:
        """``trainer.train``, resumed from the last checkpoint if there is one (a progress
        folder's, copied in, when it is further on).

        A checkpoint saved where ``stop_after_steps`` ended the run (killed before ``final/`` was
        written) is the run's result: its weights and trainer state are loaded and no step is
        trained, since transformers' loop runs one step before any callback can stop it.
        """
        if self.progress is not None:
            imported = import_progress(self.progress_dir, self.run_dir, step=self.progress["step"])
            self.resume_from = str(imported)
        if (
            self.resume_from
            and self.stop_after_steps
            and checkpoint_step(self.resume_from) >= self.stop_after_steps
        ):
            load_checkpoint(trainer, Path(self.resume_from))
            return
        if self.resume_from and not _has_optimizer_state(Path(self.resume_from)):
            from training.callbacks import ScheduleAtResumedStep

            trainer.add_callback(ScheduleAtResumedStep())
        trainer.train(resume_from_checkpoint=self.resume_from)

    def check_data(self, data: dict[str, Any]) -> None:
        """Refuse to go on from a progress folder trained on other examples: a resume skips the
        batches already trained, by position, so it must see the same examples in the same order."""
        trained = (self.progress or {}).get("examples_sha256")
        built = data.get("examples_sha256")
        if trained and built and trained != built:
            raise ValueError(
                f"{self.progress_dir}: its checkpoint was trained on examples with sha256 "
                f"{trained}, but this run's examples have sha256 {built} (a changed config, "
                "generator or case set); train into a new output_dir and progress_dir, or "
                "restore what built the examples"
            )

    def callbacks(self) -> list:
        # here, not at the top: the trainer callbacks import transformers' trainer, and the light
        # helpers above (resolve_harness_dir, which an ablation's table rebuild uses) must not
        from training.callbacks import MetricsLogger, StopAfterSteps

        callbacks = [MetricsLogger(self.run_dir / "metrics.jsonl", stage=self.stage)]
        if self.stop_after_steps:
            callbacks.append(StopAfterSteps(self.stop_after_steps))
        return callbacks

    def finish(
        self,
        trainer,
        tokenizer,
        *,
        config: StageConfig,
        harness_dir: Path,
        data: dict[str, Any],
        trainer_name: str,
        extra: dict[str, Any] | None = None,
    ) -> Path:
        """Save the final model (safetensors) and write the model card."""
        from harness import load_dir

        trainer.save_model(str(self.final_dir))
        tokenizer.save_pretrained(str(self.final_dir))
        extra = dict(extra or {})
        if config.lora_rank:
            extra["adapter"] = save_adapter_base(
                self.final_dir, base_name=config.model, base_dir=self.model_dir, config=config
            )
        bundle = load_dir(harness_dir)
        ModelCard(
            stage=self.stage,
            base_model=base_model_of(self.model_dir),
            parent_checkpoint=str(self.model_dir),
            data=data,
            harness_name=bundle.name,
            harness_digest=bundle.digest,
            steps=int(trainer.state.global_step),
            wall_time_s=time.perf_counter() - self.started,
            trainer=trainer_name,
            extra=extra,
        ).write(self.run_dir)
        if self.progress_dir:
            kept = {k: data[k] for k in ("examples_sha256", "n_examples") if k in data}
            export_progress(
                self.run_dir,
                self.progress_dir,
                facts={"stage": self.stage, "max_steps": config.max_steps, **kept},
            )
        return self.final_dir


def save_adapter_base(
    final: Path, *, base_name: str, base_dir: Path, config: StageConfig
) -> dict[str, Any]:
    """Next to the adapter PEFT saved: ``adapter_base.json`` (which base, and how to recognise it on
    another machine), and ``adapter_config.json`` naming that base instead of this machine's cache
    path. Returns the facts for the model card."""
    import json

    from harness import adapters

    record = adapters.base_record(base_name, base_dir)
    (final / adapters.BASE_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    config_path = final / adapters.ADAPTER_CONFIG
    peft = json.loads(config_path.read_text(encoding="utf-8"))
    peft["base_model_name_or_path"] = record["base"]
    config_path.write_text(json.dumps(peft, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if problem := adapters.adapter_problem(final):
        raise RuntimeError(f"the saved adapter is not usable: {problem}")
    size = sum(f.stat().st_size for f in final.iterdir() if f.name.startswith("adapter_model"))
    return {
        "rank": config.lora_rank,
        "alpha": config.lora_alpha or 2 * config.lora_rank,
        "dropout": config.lora_dropout,
        "target_modules": config.lora_target_modules,
        "base": record["base"],
        "base_identity": adapters.base_identity(record),
        "weights_bytes": size,
    }


def _has_accelerator() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _bf16_accelerator() -> bool:
    """Mixed precision in bf16 (fp32 master weights) on a GPU that has it; fp32 on CPU, where bf16
    matrix products are slower on these cores (no AVX-512 BF16 / AMX)."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def load_checkpoint(trainer, checkpoint: Path) -> None:
    """Load a ``checkpoint-N`` folder's weights (safetensors, one file or shards, or a LoRA
    adapter's) and trainer state into ``trainer`` without training. Only weights tied to a loaded
    one may be absent from the files."""
    from safetensors.torch import load_file
    from transformers import TrainerState

    adapter = checkpoint / "adapter_model.safetensors"
    if adapter.is_file():  # a LoRA run's checkpoint: the adapter's weights only
        from peft import set_peft_model_state_dict

        result = set_peft_model_state_dict(trainer.model, load_file(str(adapter)))
        if result.unexpected_keys:
            raise ValueError(
                f"{adapter}: weights do not match the model's adapter "
                f"(unexpected {list(result.unexpected_keys)[:5]})"
            )
        trainer.state = TrainerState.load_from_json(str(checkpoint / "trainer_state.json"))
        return
    files = sorted(checkpoint.glob("model*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{checkpoint}: no model*.safetensors to load")
    state: dict[str, Any] = {}
    for file in files:
        state.update(load_file(str(file)))
    model = trainer.model
    missing, unexpected = model.load_state_dict(state, strict=False)
    current = model.state_dict()
    loaded = {current[name].data_ptr() for name in state if name in current}
    untied = [name for name in missing if current[name].data_ptr() not in loaded]
    if unexpected or untied:
        raise ValueError(
            f"{checkpoint}: weights do not match the model (missing {untied}, "
            f"unexpected {list(unexpected)})"
        )
    trainer.state = TrainerState.load_from_json(str(checkpoint / "trainer_state.json"))


#: glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def keep_freed_memory() -> bool:
    """Let this process reuse the big blocks it frees instead of giving them back to the kernel.

    glibc serves every allocation over 32 MB from its own ``mmap`` and unmaps it on ``free``, so a
    training step's large temporaries (activations, log-prob tiles) are page-faulted and zeroed by
    the kernel again at every step. Measured on 2 cores, 3 SFT steps of SmolLM2-135M (2 examples
    each, training.cpu_scoring on): 179.6 s -> 147.8 s, kernel time 62.0 s -> 15.6 s, the same
    losses; the peak stays mapped (8.9 -> 10.4 GB). Not done where glibc's own ``MALLOC_MMAP_MAX_``
    is set, or off glibc. Returns whether it was done."""
    if "MALLOC_MMAP_MAX_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    # served from the heap (no mmap), and the free top of the heap kept up to 2 GB
    return bool(libc.mallopt(_M_MMAP_MAX, 0)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 2**31 - 1))


def start_stage(config: StageConfig, *, stage: str) -> StageRun:
    """Create (or reopen) the run folder, write the resolved config, find the checkpoint to resume;
    from here this process keeps the memory it frees (``keep_freed_memory``)."""
    keep_freed_memory()
    run_dir = Path(config.output_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    dump_config(config, run_dir / "config.json")
    resume = last_checkpoint(run_dir) if config.resume else None
    progress = read_progress(config.progress_dir) if config.resume and config.progress_dir else None
    if progress and resume and checkpoint_step(resume) >= int(progress["step"]):
        progress = None  # the run's own checkpoint is as far on
    return StageRun(
        run_dir=run_dir,
        stage=stage,
        model_dir=resolve_model(config.model),
        started=time.perf_counter(),
        resume_from=str(resume) if resume else None,
        stop_after_steps=config.stop_after_steps,
        progress_dir=config.progress_dir,
        progress=progress,
    )


def _has_optimizer_state(checkpoint: Path) -> bool:
    return any((checkpoint / name).is_file() for name in ("optimizer.pt", "optimizer.bin"))


def checkpointing_args(enabled: bool) -> dict[str, Any]:
    """Activation (gradient) checkpointing under the name this transformers takes: newer releases
    renamed ``gradient_checkpointing`` to ``activation_checkpointing`` and warn on the old name."""
    from transformers import TrainingArguments

    prefix = (
        "activation"
        if "activation_checkpointing" in TrainingArguments.__dataclass_fields__
        else "gradient"
    )
    return {
        f"{prefix}_checkpointing": enabled,
        f"{prefix}_checkpointing_kwargs": {"use_reentrant": False},
    }
