"""The complete agent's compute floor on this machine: the work its answered requests did, at the
fastest rates llama.cpp reaches here.

A deployment replay records every model call (``runs/serving/RUN/requests.jsonl``: prompt tokens,
the tokens taken from the slot cache, output tokens). For each request answered without the
Harness's fallback this reads what it had to compute: the prompt tokens each call prefilled (not
from the cache) and the tokens it decoded. Then, in this process, on the checkpoint's GGUF, it
measures llama.cpp's rates in the situations those calls were in, several times, and keeps the
fastest of each:

- a first call: the agent's rendered first prompt of a replay case, its Harness prefix already in
  a slot, so only the request's own blocks are prefilled (the first prompt of the run warms the
  slot and is not counted);
- a later call: a loaded skill's body (what a later call appends, with the tool results) prefilled
  after that prompt and its output;
- decoding after the agent prompt.

A request's floor is sum(prefilled / rate) + decoded / decode rate: no tool, MCP, HTTP, sampling or
scheduling time, at the best rate seen, so the agent cannot answer that request faster on this
machine with this checkpoint's behaviour. Printed beside the runs' measured P50, and the share of
answered requests whose floor is within ``--target`` seconds.

    .venv/bin/python benchmarks/agent_compute_floor.py runs/serving/*-engine-gguf-* .venv/bin/python
    benchmarks/agent_compute_floor.py RUN --checkpoint runs/demo-sft-2/final --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from local_engine import agent_prompts  # noqa: E402


def _load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def request_work(run_dir: Path) -> tuple[list[dict[str, Any]], list[float]]:
    """(the answered requests' work, every measured request's seconds) of one replay run folder."""
    path = run_dir / "requests.jsonl"
    rows = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    measured = [r for r in rows if r.get("phase") == "measured"]
    work = []
    for r in measured:
        if r.get("status") != "ok" or not r.get("calls"):
            continue
        calls = [c for c in r["calls"] if c.get("input_tokens")]
        work.append(
            {
                "case": r.get("case_id"),
                "seconds": r.get("elapsed_s"),
                "first_prefill": max(
                    0, calls[0]["input_tokens"] - (calls[0].get("cached_tokens") or 0)
                )
                if calls
                else 0,
                "later_prefill": sum(
                    max(0, c["input_tokens"] - (c.get("cached_tokens") or 0)) for c in calls[1:]
                ),
                "decoded": sum(c.get("output_tokens") or 0 for c in r["calls"]),
            }
        )
    return work, [r["elapsed_s"] for r in measured if r.get("elapsed_s") is not None]


def measure_rates(checkpoint: Path, repeats: int) -> dict[str, float]:
    """The fastest first-call prefill, later-call prefill and decode rates (tok/s) of ``repeats``
    tries."""
    from harness import demo_harness_dir, load_dir
    from harness.policies.base import decode_rate
    from serving.llama_cpp import LlamaCppPolicy

    policy = LlamaCppPolicy(checkpoint)
    server = policy.server()
    tokenizer = policy.tokenizer
    skill = load_dir(demo_harness_dir()).skills["item_qa"]
    result = {
        "name": "load_skill",
        "result": {"skill": skill.name, "kind": skill.kind, "instructions": skill.render_body()},
    }  # as builtin_tools returns it
    appended = tokenizer.encode(
        f"<|im_end|>\n<|im_start|>user\n<tool_response>{json.dumps(result)}"
        "</tool_response><|im_end|>\n<|im_start|>assistant\n",
        add_special_tokens=False,
    )
    prompts = agent_prompts(checkpoint, ROOT / "data" / "world" / "replay.jsonl", repeats + 1)
    server.complete(prompts[0], max_new_tokens=1)  # the Harness prefix into a slot
    best = {"first_prefill": 0.0, "later_prefill": 0.0, "decode": 0.0}
    for prompt in prompts[1:]:
        first = server.complete(prompt, max_new_tokens=64)
        new = first.prompt_tokens - first.cached_tokens
        best["first_prefill"] = max(best["first_prefill"], new / first.ttft_s)
        later = server.complete(prompt + first.ids + appended, max_new_tokens=32)
        new_later = later.prompt_tokens - later.cached_tokens
        best["later_prefill"] = max(best["later_prefill"], new_later / later.ttft_s)
        for done in (first, later):
            if len(done.ids) > 8:  # a handful of tokens times the stream's start, not decoding
                rate = decode_rate(len(done.ids), done.ttft_s, done.finished_at - done.submitted_at)
                best["decode"] = max(best["decode"], rate or 0.0)
        print(
            f"  try: first call {new} tokens in {first.ttft_s:.2f} "
            f"s, decoded {len(first.ids)}; later call "
            f"{new_later} tokens in {later.ttft_s:.2f} s, decoded {len(later.ids)}",
            flush=True,
        )
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="replay run folders (runs/serving/RUN)")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=ROOT / "runs" / "demo-sft-2" / "final",
        help="the checkpoint or LoRA adapter folder the runs served (its GGUF export is measured)",
    )
    parser.add_argument(
        "--repeats", type=int, default=4, help="tries per rate; the fastest is kept"
    )
    parser.add_argument("--target", type=float, default=3.5, help="the P50 target in seconds")
    args = parser.parse_args(argv)

    work: list[dict[str, Any]] = []
    print("runs (measured requests: P50 of all, answered without the fallback):")
    for run in args.runs:
        answered, seconds = request_work(run)
        work += answered
        p50 = statistics.median(seconds) if seconds else float("nan")
        print(f"  {run.name}: P50 {p50:.2f} s, answered {len(answered)} of {len(seconds)}")
    if not work:
        print("no answered request in these runs: nothing to measure against")
        return 1

    from harness.checkpoints import resolve_checkpoint

    # a LoRA adapter folder is measured as what serves it: its base merged with it (model cache)
    checkpoint = resolve_checkpoint(str(args.checkpoint))
    print(f"\nllama.cpp on {args.checkpoint} ({_load()}):")
    started = time.perf_counter()
    rates = measure_rates(checkpoint, args.repeats)
    print(
        f"fastest of {args.repeats} tries ({time.perf_counter() - started:.0f} "
        f"s, {_load()}): first-call prefill "
        f"{rates['first_prefill']:.0f} tok/s, later-call "
        f"prefill {rates['later_prefill']:.0f} tok/s, "
        f"decode {rates['decode']:.1f} tok/s"
    )

    floors = sorted(
        w["first_prefill"] / rates["first_prefill"]
        + w["later_prefill"] / rates["later_prefill"]
        + w["decoded"] / rates["decode"]
        for w in work
    )
    prefilled = [w["first_prefill"] + w["later_prefill"] for w in work]
    decoded = [w["decoded"] for w in work]
    measured = [w["seconds"] for w in work]

    def spread(values: list[float]) -> str:
        q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        return f"median {q[1]:.0f} (quartiles {q[0]:.0f}-{q[2]:.0f})"

    print(f"\n{len(work)} answered requests:")
    print(f"  prefilled tokens (not from the cache): {spread(prefilled)}")
    print(f"  decoded tokens: {spread(decoded)}")
    print(f"  measured seconds: median {statistics.median(measured):.2f}")
    print(
        f"  compute floor at the fastest rates: median {statistics.median(floors):.2f} s "
        f"(min {floors[0]:.2f}, max {floors[-1]:.2f}); within {args.target} s: "
        f"{sum(f <= args.target for f in floors)} of {len(floors)}"
    )
    print(
        f"  a median floor of {args.target} s needs every "
        f"rate x{statistics.median(floors) / args.target:.2f} "
        "(or that much less work per request)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
