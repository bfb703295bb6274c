"""Stage 3: HSA-RL with TRL's ``GRPOTrainer`` and a rollout_func that runs the project's runtime.

GDPO: ``multi_objective_aggregation="normalize_then_sum"`` normalises each
reward dimension within its group before the weighted sum. GSPO:
``importance_sampling_level="sequence"`` with the per-sequence ``"grpo"`` loss.
``HarnessGRPOTrainer`` adds one step TRL does not have: samples whose
advantage is zero are dropped before the update (``training.advantages``).
Tool results and hook messages are in the sequence for context but masked out
of the loss through the rollout's ``env_mask``. With ``shared_prefix`` a group's
rollouts share one Harness state and the prompt they share is encoded once
(``training.shared_prefix``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trl import GRPOTrainer

from training import cpu_scoring
from training.advantages import drop_zero_advantage
from training.rl_config import RLStageConfig
from training.shared_prefix import SharedPrefixMixin
from training.stage_common import resolve_harness_dir, start_stage


class HarnessGRPOTrainer(SharedPrefixMixin, GRPOTrainer):
    """GRPOTrainer that drops zero-advantage samples after scoring and encodes the prompt a group's
    rollouts share once (``training.shared_prefix``; the same loss and gradients as the plain
    path)."""

    def __init__(
        self, *args, drop_zero_advantage: bool = True, shared_prefix: bool = False, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.drop_zero_advantage = drop_zero_advantage
        self.use_shared_prefix = shared_prefix

    def _prepare_inputs(self, generation_batch):
        """With shared_prefix, the generation batch is shuffled by whole groups before TRL cuts it
        into micro-batches (``training.shared_prefix.shuffle_groups``), so a group stays in one."""
        if not self.use_shared_prefix:
            return super()._prepare_inputs(generation_batch)
        import trl.trainer.grpo_trainer as grpo

        from training.shared_prefix import shuffle_groups

        original, grpo.shuffle_sequence_dict = grpo.shuffle_sequence_dict, shuffle_groups
        try:
            return super()._prepare_inputs(generation_batch)
        finally:
            grpo.shuffle_sequence_dict = original

    def _get_per_token_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
    ):
        with self.shared_prefix_scoring(model):
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
            )

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        batch = super()._generate_and_score_completions(inputs)
        if self.drop_zero_advantage and self.model.training:
            batch, dropped = drop_zero_advantage(batch, multiple=self.args.steps_per_generation)
            self._metrics["train"]["dropped_zero_advantage"].append(float(dropped))
        return batch


def build_rl_args(
    config: RLStageConfig, run, *, max_rounds: int, weights: list[float], **overrides
):
    from trl import GRPOConfig

    args = run.common_trainer_args(config)
    args.update(
        num_generations=config.num_generations,
        beta=config.beta,
        epsilon=config.epsilon,
        temperature=config.temperature,
        top_p=config.top_p,
        max_completion_length=config.max_new_tokens * max_rounds + 512,
        multi_objective_aggregation="normalize_then_sum",
        importance_sampling_level="sequence",
        loss_type="grpo",
        reward_weights=weights,
        mask_truncated_completions=False,
        log_completions=False,
        disable_dropout=True,
        remove_unused_columns=False,
        shuffle_dataset=True,
    )
    args.update(overrides)
    return GRPOConfig(**args)


def run_rl(
    config: RLStageConfig, *, extra_rewards: dict[str, tuple[Callable, float]] | None = None
) -> Path:
    """Train stage 3 and return the final model folder.

    ``extra_rewards`` adds reward callables (name -> (function, weight)) beside the
    five HAT rewards, e.g. a business metric; they are normalised per group too.
    """
    from datasets import Dataset
    from transformers import AutoTokenizer

    from evaluation.scoring import judge_for
    from harness import load_dir
    from harness.policies import GenerationSettings
    from training.case_sources import training_cases
    from training.hsa import build_pool
    from training.rewards import make_reward_funcs
    from training.rollout import HarnessRollout

    cpu_scoring.enable()
    run = start_stage(config, stage="rl")
    harness_dir = resolve_harness_dir(config.harness)
    bundle = load_dir(harness_dir)
    source = training_cases(config.cases, limit=config.max_cases)
    tokenizer = AutoTokenizer.from_pretrained(run.model_dir, padding_side="left")
    settings = GenerationSettings(
        temperature=config.temperature, top_p=config.top_p, max_new_tokens=config.max_new_tokens
    )
    max_rounds = config.max_rounds or None
    rounds = int(max_rounds or bundle.prompt.constraints["max_rounds"])
    pool = build_pool(
        bundle=bundle,
        size=config.variant_pool_size if config.augmented_fraction > 0 else 0,
        seed=config.seed,
        dims=config.hsa_dims,
        cases=source.cases,
        catalogue=source.catalogue,
        agent_kwargs={
            "max_rounds": max_rounds,
            "trajectory_budget_s": config.trajectory_budget_s,
            "generation": settings,
        },
    )
    rollout = HarnessRollout(
        pool=pool,
        cases={c["id"]: c for c in source.cases},
        tokenizer=tokenizer,
        settings=settings,
        augmented_fraction=config.augmented_fraction,
        failure_rate=config.failure_rate,
        seed=config.seed,
        harness_per_group=config.shared_prefix,
    )
    judge = judge_for(bundle, catalogue=source.catalogue)
    funcs = make_reward_funcs(judge=judge, tokenizer=tokenizer)
    rewards = [(funcs[name], weight) for name, weight in config.reward_weights.items()]
    for name, (func, weight) in (extra_rewards or {}).items():
        func.__name__ = name
        rewards.append((func, weight))
    try:
        trainer = HarnessGRPOTrainer(
            model=str(run.model_dir),
            reward_funcs=[f for f, _ in rewards],
            args=build_rl_args(config, run, max_rounds=rounds, weights=[w for _, w in rewards]),
            train_dataset=Dataset.from_list([{"prompt": c["id"]} for c in source.cases]),
            processing_class=tokenizer,
            callbacks=run.callbacks(),
            rollout_func=rollout,
            drop_zero_advantage=config.drop_zero_advantage,
            peft_config=config.peft_config(),
            shared_prefix=config.shared_prefix,
        )
        run.train(trainer)
        final = run.finish(
            trainer,
            tokenizer,
            config=config,
            harness_dir=harness_dir,
            data={
                "tasks": source.name,
                "n_tasks": len(source.cases),
                "augmented_fraction": config.augmented_fraction,
                "failure_rate": config.failure_rate,
                "rollouts": rollout.calls_made,
            },
            trainer_name="trl.GRPOTrainer (rollout_func, GDPO, GSPO, zero-advantage drop)",
            extra={
                "reward_weights": config.reward_weights,
                "beta": config.beta,
                "shared_prefix": config.shared_prefix and trainer.shared_prefix_stats.to_dict(),
                "variant_pool": [e.name for e in pool.variants],
            },
        )
    finally:
        pool.close()
    if config.evaluate_after:
        from training.self_eval import evaluate_run

        evaluate_run(
            run_dir=run.run_dir, harness_dir=harness_dir, cases=config.eval_cases, seed=config.seed
        )
    return final
