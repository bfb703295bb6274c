"""A LoRA adapter run against a full fine-tuning run: peak memory, step time and the files it
writes.

    .venv/bin/python benchmarks/adapter_memory.py [--model local|tiny] [--steps 2] [--batch 2]
    [--rank 16]

Both runs are the project's SFT stage (``python -m training sft``) on the same examples (the first
cases' gold trajectories under the demo Harness, packed by trajectory) with the same batch,
steps and learning rate; one trains every weight, the other a LoRA adapter of ``--rank`` on every
linear layer (the demo adapter's settings). Each runs in a child process of its own, one after
the other, so each peak resident memory (the child's ``ru_maxrss``) is its own. Printed side by
side: peak RSS, seconds per step, and the bytes of ``final/`` (what a run keeps and ships).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(
    kind: str, *, model: str, examples: Path, steps: int, batch: int, rank: int, out: Path
) -> dict:
    argv = [
        sys.executable,
        "-m",
        "training",
        "sft",
        "--model",
        model,
        "--examples",
        str(examples),
        "--output-dir",
        str(out),
        "--max-steps",
        str(steps),
        "--per-device-train-batch-size",
        str(batch),
        "--save-steps",
        str(steps),
        "--learning-rate",
        "1e-4",
        "--max-length",
        "4096",
    ]
    if kind == "lora":
        argv += ["--lora-rank", str(rank)]
    started = time.perf_counter()
    # a fresh child per run: its peak RSS is its own (RUSAGE_CHILDREN keeps the largest child's)
    code = f"""
import resource, subprocess, sys, json
r = subprocess.run({argv!r}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({{"rc": r.returncode, "maxrss_kb": peak, "err": r.stderr[-800:]}}))
"""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    if facts["rc"] != 0:
        raise SystemExit(f"{kind} run failed:\n{facts['err']}")
    wall = time.perf_counter() - started
    rows = [
        json.loads(line)
        for line in (out / "metrics.jsonl").read_text().splitlines()
        if line.strip()
    ]
    step_s = [r["train_runtime"] / max(1, r["step"]) for r in rows if "train_loss" in r]
    final = out / "final"
    kept = sum(f.stat().st_size for f in final.iterdir() if f.is_file())
    weights = sum(
        f.stat().st_size
        for f in final.iterdir()
        if f.name.startswith(("model", "adapter_model")) and f.suffix == ".safetensors"
    )
    return {
        "kind": kind,
        "peak_rss_gb": facts["maxrss_kb"] / 2**20,
        "s_per_step": step_s[0] if step_s else None,
        "wall_s": wall,
        "final_mb": kept / 1e6,
        "weights_mb": weights / 1e6,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument(
        "--cases", type=int, default=4, help="training cases whose gold trajectories train"
    )
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--rank", type=int, default=16)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from training.sft_config import SFTStageConfig
    from training.stage_common import resolve_harness_dir
    from training.trajectory_data import build_sft_examples, write_examples

    print(
        f"resource: {resource.getrlimit(resource.RLIMIT_AS)}; cores: {os.cpu_count()}; "
        f"threads: {os.environ.get('OMP_NUM_THREADS', 'default')}",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        built, _ = build_sft_examples(
            config=SFTStageConfig(max_cases=args.cases, hsa_variants=0),
            harness_dir=resolve_harness_dir("demo"),
        )
        write_examples(built, tmp / "examples.jsonl")
        results = [
            run(
                kind,
                model=args.model,
                examples=tmp / "examples.jsonl",
                steps=args.steps,
                batch=args.batch,
                rank=args.rank,
                out=tmp / kind,
            )
            for kind in ("full", "lora")
        ]
    print(
        f"\nSFT on {args.model}, {args.steps} steps of "
        f"{args.batch} packed sequences ({len(built)} turns), "
        f"LoRA rank {args.rank} on every linear layer"
    )
    print(f"{'run':<6} {'peak RSS GB':>12} {'s/step':>8} {'final/ MB':>10} {'weights MB':>11}")
    for r in results:
        print(
            f"{r['kind']:<6} {r['peak_rss_gb']:>12.2f} {r['s_per_step'] or float('nan'):>8.1f} "
            f"{r['final_mb']:>10.1f} {r['weights_mb']:>11.1f}"
        )
    full, lora = results
    print(
        f"lora/full: peak RSS x{lora['peak_rss_gb'] / full['peak_rss_gb']:.2f}, "
        f"step time x{(lora['s_per_step'] or 0) / (full['s_per_step'] or 1):.2f}, "
        f"weights x{lora['weights_mb'] / full['weights_mb']:.3f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
