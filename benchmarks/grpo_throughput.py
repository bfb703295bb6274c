"""One GRPO step of the RL stage, 4 rollouts per prompt, with and without the shared prefix.

    .venv/bin/python benchmarks/grpo_throughput.py [--model tiny|local|DIR] [--rollouts 4]
    [--repeats 1]

The stage's trainer (``HarnessGRPOTrainer``) with the stage's arguments (GDPO, GSPO, the reference
model at beta 0.01, ``training.cpu_scoring``) trains one group: the first model call of a demo
Harness case as the prompt (what the runtime sends, about 1,900 tokens), and as the rollouts that
case's gold trajectory after it (tool call, tool result, reply; env_mask 0 on what the runtime
wrote), each diverging at its first token and cut to a different length, as sampled rollouts are.
The rollouts are fixed rather than sampled, so the step times the training side only (the
policy's log-probabilities with gradients, the reference model's, the update), which is what the
shared prefix changes; generation is the same both ways. Runs alternate in one process (plain TRL's
path, i.e. ``shared_prefix: false``, then the shared prefix, then again).

Printed: seconds per step, tokens/s and trained tokens/s (model tokens under env_mask), the
speed-up (target: at least 3x), and the step's loss and gradient norm both ways (the same batch, so
the same figures; at the first step GRPO's loss is about 0, its ratios being 1, so the gradient norm
is the telling one).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def group(tokenizer, rollouts: int):
    """(prompt ids, [completion ids], [env_mask]) of one demo case's first call and its gold
    continuation."""
    from training.conversations import chains, tokenize_chain
    from training.sft_config import SFTStageConfig
    from training.stage_common import resolve_harness_dir
    from training.trajectory_data import build_sft_examples

    built, _ = build_sft_examples(
        config=SFTStageConfig(max_cases=6, hsa_variants=0), harness_dir=resolve_harness_dir("demo")
    )
    chain = max(chains(built), key=lambda c: len(c.trained))  # the case with the most model turns
    first = chain.trained[0]
    prompt = tokenizer.apply_chat_template(
        chain.messages[:first], tokenize=False, add_generation_prompt=True
    )
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    row = tokenize_chain(tokenizer, chain)
    assert row["input_ids"][: len(prompt_ids)] == prompt_ids
    completion, mask = (
        row["input_ids"][len(prompt_ids) :],
        row["completion_mask"][len(prompt_ids) :],
    )
    out_ids, out_mask = [], []
    for k in range(rollouts):
        keep = max(8, len(completion) - k * len(completion) // (2 * rollouts))  # different lengths
        ids = list(completion[:keep])
        ids[0] = (ids[0] + 1 + k) % len(tokenizer)  # sampled rollouts part at their first token
        out_ids.append(ids)
        out_mask.append([1] + list(mask[1:keep]))
    return prompt_ids, out_ids, out_mask


def one_step(model: str, *, shared: bool, rollouts: int, out: Path, micro: int):
    import torch  # noqa: F401
    from datasets import Dataset
    from transformers import AutoTokenizer

    from training import cpu_scoring
    from training.rl_config import RLStageConfig
    from training.rl_trainer import HarnessGRPOTrainer, build_rl_args
    from training.stage_common import start_stage

    cpu_scoring.enable()
    micro = rollouts if shared else micro  # the shared path takes the group in one forward
    config = RLStageConfig(
        model=model,
        output_dir=str(out),
        max_steps=1,
        num_generations=rollouts,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=rollouts // micro,
        shared_prefix=shared,
    )
    run = start_stage(config, stage="rl")
    tokenizer = AutoTokenizer.from_pretrained(run.model_dir, padding_side="left")
    prompt_ids, completions, masks = group(tokenizer, rollouts)

    def rollout(prompts, trainer):
        n = len(prompts)
        return {
            "prompt_ids": [prompt_ids] * n,
            "completion_ids": completions[:n],
            "logprobs": [[-1.0] * len(c) for c in completions[:n]],
            "env_mask": masks[:n],
        }

    def reward(prompts, completions, **kwargs):  # distinct rewards: every rollout has an advantage
        return [float(i) for i in range(len(prompts))]

    args = build_rl_args(config, run, max_rounds=4, weights=[1.0], save_strategy="no")
    trainer = HarnessGRPOTrainer(
        model=str(run.model_dir),
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "case"}]),
        processing_class=tokenizer,
        rollout_func=rollout,
        shared_prefix=shared,
    )
    started = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - started
    tokens = len(prompt_ids) * rollouts + sum(len(c) for c in completions)
    trained = sum(sum(m) for m in masks)
    grad_norm = next(row["grad_norm"] for row in trainer.state.log_history if "grad_norm" in row)
    return {
        "seconds": seconds,
        "runtime": result.metrics["train_runtime"],
        "loss": result.metrics["train_loss"],
        "grad_norm": float(grad_norm),
        "tokens": tokens,
        "trained": trained,
        "prompt": len(prompt_ids),
        "stats": trainer.shared_prefix_stats.to_dict() if shared else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=0,
        help="the plain path takes the group in micro-batches of this size (gradient accumulation: "
        "the same step, less memory); 0: the whole group at once",
    )
    args = parser.parse_args()
    results: dict[bool, list[dict]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for shared in (False, True):
                r = one_step(
                    args.model,
                    shared=shared,
                    rollouts=args.rollouts,
                    out=Path(tmp) / f"{shared}{repeat}",
                    micro=args.micro_batch or args.rollouts,
                )
                results[shared].append(r)
                print(
                    f"  {'shared prefix' if shared else 'plain path':<14} "
                    f"run {repeat}: {r['runtime']:7.1f} s, "
                    f"loss {r['loss']:.6g}, grad norm {r['grad_norm']:.8g}",
                    flush=True,
                )
    first = results[False][0]
    print(
        f"\nmodel {args.model}: one GRPO step, {args.rollouts} "
        f"rollouts of a {first['prompt']}-token prompt, "
        f"{first['tokens']} tokens, {first['trained']} "
        f"trained; load average {os.getloadavg()[0]:.2f}"
    )
    median = {s: statistics.median(r["runtime"] for r in results[s]) for s in (False, True)}
    for shared in (False, True):
        print(
            f"{'shared prefix' if shared else 'plain path':<14}: {median[shared]:7.1f} s/step  "
            f"{first['tokens'] / median[shared]:8.1f} tokens/s  "
            f"{first['trained'] / median[shared]:6.2f} trained tokens/s"
            f"  losses {[r['loss'] for r in results[shared]]}  grad "
            f"norms {[r['grad_norm'] for r in results[shared]]}"
        )
    print(f"speed-up: x{median[False] / median[True]:.2f} (target >= 3)")
    print(f"shared prefix: {results[True][0]['stats']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
