"""The quality side of the GGUF format choice: T1 AVG per format against the fp32 path, paired.

Runs ``python -m evaluation run`` on the same dev cases once on the fp32 path
(the torch engine, ``torch:CHECKPOINT``, no quantization) and once per GGUF
format on the llama.cpp route (``llama:CHECKPOINT`` with
``$HARNESS_GGUF_QUANTIZATION``), then prints, per path, AVG (the mean of
Accuracy and Effectiveness, percent), how the requests ended, and the paired
difference from fp32 with its bootstrap interval (``evaluation.compare``). The
criterion is a loss of at most 1 point: a format passes when the 95% interval
of its difference lies above -1, fails when it lies below, and the sample
cannot tell otherwise. Evaluations decode greedily, so the two paths differ
only where the format (or the engines' arithmetic) changes a greedy choice.

Quality is measured apart from speed: the trajectory budget is lifted
(``--budget-s``, default 60 s) so that a slower path is not scored on its
fallbacks; the speed side is ``benchmarks/local_engine.py``. Each path's run
folder under ``--out`` resumes, so the command can be stopped and run again.
``--jobs 2`` runs two paths side by side with one thread each.

    .venv/bin/python benchmarks/quantization_quality.py --checkpoint runs/demo-sft-2/final \\
        --limit 120 --formats Q8_0 Q4_0 --out var/bench/quantization   # ~75 min on 2 cores
        (measured: 2,216 + 2,327 s side by side, then Q4_0)
    .venv/bin/python benchmarks/quantization_quality.py --checkpoint tiny --limit 2 --out /tmp/q   #
    plumbing
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.compare import compare_runs  # noqa: E402
from evaluation.runner import RESULTS, load_results  # noqa: E402
from evaluation.summary import outcome_line, summarize  # noqa: E402
from serving.gguf import QUANTIZATIONS  # noqa: E402

FP32 = "fp32"


def _run(path: str, args: argparse.Namespace, threads: int) -> float:
    """One path's evaluation (resumed where its folder has results); its wall seconds."""
    env = dict(
        os.environ,
        OMP_NUM_THREADS=str(threads),
        HARNESS_LLAMA_THREADS=str(threads),
        HARNESS_ENGINE_QUANTIZATION="none",
    )
    if path == FP32:
        policy = f"torch:{args.checkpoint}"
    else:
        policy = f"llama:{args.checkpoint}"
        env["HARNESS_GGUF_QUANTIZATION"] = path
    out = Path(args.out) / path
    command = [
        sys.executable,
        "-m",
        "evaluation",
        "run",
        "--harness",
        args.harness,
        "--set",
        args.set,
        "--policy",
        policy,
        "--out",
        str(out),
        "--limit",
        str(args.limit),
        "--trajectory-budget-s",
        str(args.budget_s),
        "--no-progress",
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{path}: evaluation run failed ({done.returncode}):\n{done.stderr[-2000:]}"
        )
    print(f"{path}: {wall:.0f} s this run; {done.stdout.strip()}", flush=True)
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--checkpoint", required=True, help="checkpoint folder, or local / tiny")
    parser.add_argument("--formats", nargs="+", default=["Q8_0", "Q4_0"], choices=QUANTIZATIONS)
    parser.add_argument("--harness", default=str(ROOT / "harness/demo/livestream-avatar"))
    parser.add_argument("--set", default=str(ROOT / "data/world/dev.jsonl"))
    parser.add_argument("--limit", type=int, default=120, help="the first N cases of the set")
    parser.add_argument(
        "--budget-s", type=float, default=60.0, help="trajectory budget (lifted: quality only)"
    )
    parser.add_argument("--out", required=True, help="folder of the run folders (resumable)")
    parser.add_argument(
        "--jobs",
        type=int,
        choices=(1, 2),
        default=1,
        help="paths run side by side (each with 2 // jobs threads)",
    )
    args = parser.parse_args(argv)

    paths = [FP32, *[f for f in args.formats if f != FP32]]
    threads = max(1, (os.cpu_count() or 2) // args.jobs)
    print(
        f"checkpoint {args.checkpoint}, {args.limit} cases "
        f"of {args.set}, budget {args.budget_s:g} s, "
        f"{args.jobs} job(s) x {threads} thread(s); load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    with ThreadPoolExecutor(args.jobs) as pool:
        walls = dict(zip(paths, pool.map(lambda p: _run(p, args, threads), paths), strict=True))

    print(
        "\n| path | cases | AVG | delta vs fp32 [95% CI] | loses more than 1 "
        "point? | how requests ended | latency P50 / P95 | wall (this run) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in paths:
        summary = summarize(load_results(Path(args.out) / path / RESULTS))
        avg = summary["overall"].get("avg", 0.0)
        if path == FP32:
            delta = "-"
            verdict = "-"
        else:
            block = compare_runs(run_a=Path(args.out) / FP32, run_b=Path(args.out) / path)[
                "overall"
            ]["avg"]
            delta = f"{block['delta']:+.2f} [{block['low']:+.2f}, {block['high']:+.2f}]"
            if block["low"] >= -1:
                verdict = "no: the interval is above -1"
            elif block["high"] < -1:
                verdict = "yes: the interval is below -1"
            else:
                verdict = "cannot tell: the interval spans -1"
        print(
            f"| {path} | {summary['overall'].get('n', '?')} | {avg:.2f} | {delta} | {verdict} | "
            f"{outcome_line(summary)} | {summary['latency_s']['p50']} "
            f"/ {summary['latency_s']['p95']} s | "
            f"{walls[path]:.0f} s |"
        )
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
