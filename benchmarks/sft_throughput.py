"""Tokens/s of the project's SFT stage vs a plain TRL SFTTrainer on the same examples.

    .venv/bin/python benchmarks/sft_throughput.py [--model tiny|local] [--steps 8] [--repeats 2]

Both train the same per-turn examples (gold trajectories of the synthetic world
under the demo Harness, rendered by the runtime) with the same batch size,
sequence length and optimizer; the project's run additionally writes its run
folder (metrics JSONL, checkpoints, model card). Runs alternate (project,
plain, project, plain ...) so machine load hits both alike; the figure is the
median tokens/s of each and their ratio (target: at least 0.95).

A third run trains the same examples packed by trajectory (``pack_turns``, the
stage's default): its tokens/s is about the same, but each token carries more
training, so the figure that matters there is trained turns per second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def examples(n_cases: int):
    from training.sft_config import SFTStageConfig
    from training.stage_common import resolve_harness_dir
    from training.trajectory_data import build_sft_examples

    built, _ = build_sft_examples(config=SFTStageConfig(max_cases=n_cases, hsa_variants=0),
                                  harness_dir=resolve_harness_dir("demo"))
    return built


def project_run(model: str, data, steps: int, out: Path, *, pack: bool = False) -> tuple[float, float]:
    """(tokens/s, trained turns/s) of the project's SFT stage."""
    from training.runs import read_metrics, read_model_card
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    run_sft(SFTStageConfig(model=model, output_dir=str(out), max_steps=steps, save_steps=steps,
                           per_device_train_batch_size=2, max_length=4096, logging_steps=1, pack_turns=pack),
            examples=data)
    final = [r for r in read_metrics(out) if "train_runtime" in r and "train_loss" in r][-1]
    packed = read_model_card(out)["data"].get("packed") or {}
    turns_per_sequence = packed["turns"] / packed["sequences"] if packed else 1.0
    turns = steps * 2 * turns_per_sequence
    return final["num_input_tokens_seen"] / final["train_runtime"], turns / final["train_runtime"]


def plain_run(model: str, data, steps: int, out: Path) -> float:
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from harness.checkpoints import resolve_checkpoint
    from training.sft_trainer import sft_dataset

    path = resolve_checkpoint(model)
    args = SFTConfig(output_dir=str(out), max_steps=steps, per_device_train_batch_size=2, max_length=4096,
                     learning_rate=5e-5, logging_steps=1, save_strategy="no", report_to=[],
                     gradient_checkpointing=False, bf16=False, use_cpu=True, seed=0, data_seed=0,
                     include_num_input_tokens_seen="all", disable_tqdm=True)
    trainer = SFTTrainer(model=str(path), args=args, train_dataset=sft_dataset(data)[0],
                         processing_class=AutoTokenizer.from_pretrained(path))
    started = time.perf_counter()
    result = trainer.train()
    runtime = result.metrics.get("train_runtime", time.perf_counter() - started)
    return trainer.state.num_input_tokens_seen / runtime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cases", type=int, default=12)
    args = parser.parse_args()
    data = examples(args.cases)
    project, plain, packed = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            project.append(project_run(args.model, data, args.steps, Path(tmp) / f"project{i}"))
            plain.append(plain_run(args.model, data, args.steps, Path(tmp) / f"plain{i}"))
            packed.append(project_run(args.model, data, args.steps, Path(tmp) / f"packed{i}", pack=True))
    p, q = statistics.median(t for t, _ in project), statistics.median(plain)
    turns, packed_turns = statistics.median(u for _, u in project), statistics.median(u for _, u in packed)
    print(f"examples: {len(data)} per-turn examples, {args.steps} steps x batch 2, model {args.model}")
    print(f"project SFT stage : {p:8.1f} tokens/s  {turns:6.3f} turns/s  "
          f"(runs: {', '.join(f'{t:.1f}' for t, _ in project)})")
    print(f"plain SFTTrainer  : {q:8.1f} tokens/s  (runs: {', '.join(f'{v:.1f}' for v in plain)})")
    print(f"ratio             : {p / q:.3f}  (target >= 0.95)")
    print(f"packed by trajectory: {statistics.median(t for t, _ in packed):6.1f} tokens/s  {packed_turns:6.3f} "
          f"turns/s  ({packed_turns / turns:.2f}x the turns/s of per-turn examples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
