"""Tokens/s and trained tokens/s of the SFT stage (shared prefix on and off) against plain TRL.

    .venv/bin/python benchmarks/sft_throughput.py [--model tiny|local|DIR] [--batch 8] [--steps 2]
                                                  [--cases 24] [--hsa-variants 0] [--repeats 1]

All three train the gold trajectories of the demo Harness's training cases (``build_sft_examples``)
at the same batch size, learning rate and optimizer, in one process, alternating (plain TRL, the
stage without shared prefix, the stage with it, then again), so machine load hits them alike:

- **plain TRL**: ``trl.SFTTrainer`` on the per-turn prompt/completion examples, its own sampler;
- **stage, plain path**: the stage's trainer and arguments (turns packed by trajectory,
  ``training.cpu_scoring``), ``shared_prefix: false``;
- **stage, shared prefix**: the same with ``shared_prefix: true`` (batches of one Harness state,
  the system prompt encoded once per batch).

tokens/s counts every real (unpadded) token of the batches, the way the plain path would see them,
over the train loop's wall time (``train_runtime``: forward, backward, optimizer); trained tokens/s
counts the tokens the loss is on. Every run scores only the trained positions
(``training.cpu_scoring`` is on for the whole process) and none checkpoints activations, so what
differs is the stage's own: packing turns by trajectory, and the shared prefix. ``--micro-batch``
lets the two plain runs take the batch in gradient-accumulation micro-batches where the whole
batch's activations do not fit (the same step; CPU tokens/s barely depends on the micro-batch); the
shared-prefix run always takes the whole batch in one forward, since only rows of one forward share
their prefix. The figure the issue sets is the stage's trained tokens/s over plain TRL's (target: at
least 2.5x at batch 8). The losses of each step are printed too: the stage's two paths see the same
batches only when the sampler draws the same ones, so compare losses with
``tests/training/test_shared_prefix.py``, which holds the batch fixed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


class Counter:
    """Counts what every ``SFTTrainer.training_step`` of this process trains on."""

    def __init__(self) -> None:
        self.tokens = self.trained = self.steps = 0
        self.losses: list[float] = []

    def install(self) -> None:
        from trl import SFTTrainer

        original = SFTTrainer.training_step
        counter = self

        def training_step(trainer, model, inputs, *args, **kwargs):
            mask = inputs.get("attention_mask")
            counter.tokens += (
                int(mask.sum()) if mask is not None else int(inputs["input_ids"].numel())
            )
            counter.trained += int((inputs["labels"][:, 1:] != -100).sum())
            counter.steps += 1
            loss = original(trainer, model, inputs, *args, **kwargs)
            counter.losses.append(round(float(loss), 4))
            return loss

        SFTTrainer.training_step = training_step

    def reset(self) -> None:
        self.tokens = self.trained = self.steps = 0
        self.losses = []


def examples(cases: int, variants: int):
    from training.sft_config import SFTStageConfig
    from training.stage_common import resolve_harness_dir
    from training.trajectory_data import build_sft_examples

    built, _ = build_sft_examples(
        config=SFTStageConfig(max_cases=cases, hsa_variants=variants),
        harness_dir=resolve_harness_dir("demo"),
    )
    return built


def plain_trl(model: str, data, *, batch: int, steps: int, out: Path, micro: int):
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from harness.checkpoints import resolve_checkpoint
    from training.sft_trainer import sft_dataset
    from training.stage_common import checkpointing_args

    path = resolve_checkpoint(model)
    args = SFTConfig(
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=batch // micro,
        max_length=4096,
        learning_rate=5e-5,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        bf16=False,
        use_cpu=True,
        seed=0,
        data_seed=0,
        completion_only_loss=True,
        disable_tqdm=True,
        **checkpointing_args(False),
    )
    trainer = SFTTrainer(
        model=str(path),
        args=args,
        train_dataset=sft_dataset(data)[0],
        processing_class=AutoTokenizer.from_pretrained(path),
    )
    return trainer.train().metrics["train_runtime"]


def stage(model: str, data, *, batch: int, steps: int, out: Path, shared: bool, micro: int):
    from transformers import AutoTokenizer

    from training import cpu_scoring
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import HarnessSFTTrainer, build_sft_args, sft_dataset
    from training.stage_common import start_stage

    cpu_scoring.enable()
    micro = batch if shared else micro  # the shared prefix is shared within one forward
    config = SFTStageConfig(
        model=model,
        output_dir=str(out),
        max_steps=steps,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=batch // micro,
        shared_prefix=shared,
    )
    run = start_stage(config, stage="sft")
    tokenizer = AutoTokenizer.from_pretrained(run.model_dir)
    dataset, _ = sft_dataset(data, tokenizer=tokenizer)
    trainer = HarnessSFTTrainer(
        model=str(run.model_dir),
        args=build_sft_args(config, run, save_strategy="no"),
        train_dataset=dataset,
        processing_class=tokenizer,
        shared_prefix=shared,
    )
    runtime = trainer.train().metrics["train_runtime"]
    return runtime, trainer.shared_prefix_stats.to_dict() if shared else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument(
        "--micro-batch",
        type=int,
        default=0,
        help="plain TRL and the stage's plain path take the batch in micro-batches of this size "
        "(gradient accumulation: the same step, less memory); 0: the whole batch at once",
    )
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cases", type=int, default=24)
    parser.add_argument("--hsa-variants", type=int, default=0)
    parser.add_argument(
        "--runs",
        default="trl,plain,shared",
        help="which of trl, plain, shared to run (a machine "
        "short of time or memory can split them)",
    )
    args = parser.parse_args()
    import torch

    from training import cpu_scoring

    # every run scores only the trained positions: the differences are the stage's own
    cpu_scoring.enable()
    data = examples(args.cases, args.hsa_variants)
    micro = args.micro_batch or args.batch
    if args.batch % micro:
        parser.error("--micro-batch must divide --batch")
    counter = Counter()
    counter.install()
    names = {
        "trl": "plain TRL SFTTrainer",
        "plain": "stage, plain path",
        "shared": "stage, shared prefix",
    }
    wanted = [r for r in args.runs.split(",") if r in names]
    results: dict[str, list[dict]] = {r: [] for r in wanted}
    notes: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for run in wanted:
                counter.reset()
                out = Path(tmp) / f"{run}{repeat}"
                started = time.perf_counter()
                if run == "trl":
                    runtime = plain_trl(
                        args.model, data, batch=args.batch, steps=args.steps, out=out, micro=micro
                    )
                else:
                    runtime, stats = stage(
                        args.model,
                        data,
                        batch=args.batch,
                        steps=args.steps,
                        out=out,
                        shared=run == "shared",
                        micro=micro,
                    )
                    if stats:
                        notes[run] = stats
                results[run].append(
                    {
                        "tokens_s": counter.tokens / runtime,
                        "trained_s": counter.trained / runtime,
                        "tokens": counter.tokens,
                        "trained": counter.trained,
                        "runtime": runtime,
                        "losses": counter.losses,
                        "wall": time.perf_counter() - started,
                    }
                )
                print(
                    f"  {names[run]:<22} run {repeat}: {runtime:7.1f} s, {counter.tokens} tokens, "
                    f"{counter.trained} trained, losses {counter.losses}",
                    flush=True,
                )
    import os

    print(
        f"\nmodel {args.model}, batch {args.batch} (plain runs in micro-batches "
        f"of {micro}), {args.steps} steps, {len(data)} per-turn examples of "
        f"{args.cases} cases (hsa_variants {args.hsa_variants}); "
        f"torch threads {torch.get_num_threads()}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    median = {
        r: {k: statistics.median(x[k] for x in results[r]) for k in ("tokens_s", "trained_s")}
        for r in wanted
    }
    for run in wanted:
        print(
            f"{names[run]:<22}: {median[run]['tokens_s']:8.1f} "
            f"tokens/s  {median[run]['trained_s']:7.2f} "
            f"trained tokens/s"
        )
    for run in ("plain", "shared"):
        if run in median and "trl" in median:
            print(
                f"{names[run]} / plain TRL: trained tokens/s "
                f"x{median[run]['trained_s'] / median['trl']['trained_s']:.2f}"
                f"  tokens/s x{median[run]['tokens_s'] / median['trl']['tokens_s']:.2f}"
                + ("  (target >= 2.5 trained)" if run == "shared" else "")
            )
    if "plain" in median and "shared" in median:
        print(
            "shared prefix / plain path (the stage): "
            f"x{median['shared']['tokens_s'] / median['plain']['tokens_s']:.2f} "
            f"tokens/s"
        )
    if "shared" in notes:
        print(f"shared prefix: {notes['shared']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
