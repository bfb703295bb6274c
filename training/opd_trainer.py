"""Stage 2: General On-Policy Distillation with TRL's ``DistillationTrainer``.

The student (the SFT checkpoint) samples completions to general-domain prompts
and minimises the reverse KL (``beta=1.0``) of its token distribution to the
frozen *base* model's on those samples. This restores general instruction
following that narrow SFT erodes, without any teacher-written data.
"""

from __future__ import annotations

from pathlib import Path

from trl import DistillationTrainer

from training import cpu_scoring
from training.opd_config import OPDStageConfig
from training.runs import base_model_of
from training.shared_prefix import SharedPrefixMixin
from training.stage_common import resolve_harness_dir, resolve_model, start_stage


class HarnessDistillationTrainer(SharedPrefixMixin, DistillationTrainer):
    """DistillationTrainer whose student and teacher encode a batch's shared prefix once
    (``training.shared_prefix``; the same loss and gradients as the plain path)."""

    def __init__(self, *args, shared_prefix: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.use_shared_prefix = shared_prefix

    def _get_last_hidden_state(
        self, unwrapped_model, input_ids, attention_mask, logits_to_keep, **kwargs
    ):
        with self.shared_prefix_scoring(unwrapped_model):
            return super()._get_last_hidden_state(
                unwrapped_model, input_ids, attention_mask, logits_to_keep, **kwargs
            )


def teacher_dir(config: OPDStageConfig, student_dir: Path) -> Path:
    if config.teacher == "base":
        return resolve_model(base_model_of(student_dir))
    return resolve_model(config.teacher)


def build_opd_args(config: OPDStageConfig, run, **overrides):
    from trl import DistillationConfig

    args = run.common_trainer_args(config)
    args.update(
        beta=config.beta,
        max_completion_length=config.max_completion_length,
        temperature=config.temperature,
        disable_dropout=True,
    )
    args.update(overrides)
    return DistillationConfig(**args)


def run_opd(config: OPDStageConfig) -> Path:
    """Train stage 2 and return the final model folder."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.general_prompts import load_general_prompts

    cpu_scoring.enable()
    run = start_stage(config, stage="opd")
    harness_dir = resolve_harness_dir(config.harness)
    teacher_path = teacher_dir(config, run.model_dir)
    prompts = load_general_prompts(
        config.prompts, limit=config.max_prompts, seed=config.seed, split=config.prompts_split
    )
    tokenizer = AutoTokenizer.from_pretrained(run.model_dir, padding_side="left")
    teacher = AutoModelForCausalLM.from_pretrained(teacher_path)
    teacher.eval().requires_grad_(False)
    trainer = HarnessDistillationTrainer(
        model=str(run.model_dir),
        teacher_model=teacher,
        args=build_opd_args(config, run),
        train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]),
        processing_class=tokenizer,
        callbacks=run.callbacks(),
        peft_config=config.peft_config(),
        shared_prefix=config.shared_prefix,
    )
    run.train(trainer)
    final = run.finish(
        trainer,
        tokenizer,
        config=config,
        harness_dir=harness_dir,
        data={"prompts": config.prompts, "n_prompts": len(prompts)},
        trainer_name="trl.DistillationTrainer",
        extra={
            "teacher": str(teacher_path),
            "beta": config.beta,
            "shared_prefix": config.shared_prefix and trainer.shared_prefix_stats.to_dict(),
            "divergence": "reverse KL" if config.beta == 1.0 else f"JSD(beta={config.beta})",
        },
    )
    if config.evaluate_after:
        from training.self_eval import evaluate_run

        evaluate_run(
            run_dir=run.run_dir, harness_dir=harness_dir, cases=config.eval_cases, seed=config.seed
        )
    return final
