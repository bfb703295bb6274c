"""MTP draft heads on the local engine: the stale-head experiment and the speed-up, side by side.

One command, three parts, all greedy K-step speculative decoding on the engine
(batch 1, the same process, the same prompts: the first model call of the agent on
the live-room replay cases, demo Harness):

1. **Stale head.** A head adapted to the base model, measured on the base model and
   on the HAT-trained checkpoint, then the head re-adapted to that checkpoint:
   acceptance length (of K + 1), acceptance rate, per draft position.
2. **Speed.** The trained checkpoint with its re-adapted head on vs off: decode tok/s
   per request and overall, and whether the outputs are identical (they must be:
   greedy speculative decoding is exact).
3. **Complete agent.** The deployment replay through the CPU serving route, C=1, the
   Harness's own budget and the report's sampling settings: the torch engine with the
   head off and on, and llama.cpp (the default CPU route, which cannot run our head):
   P50 / P95 / share within 15 s, and the route's acceptance under sampling.

    .venv/bin/python benchmarks/mtp.py \\
        --base-head runs/mtp/base-head/final \\ --policy runs/demo-sft-2/final --head
        runs/mtp/demo-readapted/final      # ~25 min on 2 cores
    .venv/bin/python benchmarks/mtp.py --policy tiny --head HEAD --base-policy tiny --base-head HEAD
    \\
        --prompts 2 --agent-cases 1                                              # plumbing
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import torch  # noqa: E402
from local_engine import agent_prompts, complete_agent  # noqa: E402

from harness.checkpoints import resolve_checkpoint  # noqa: E402
from serving.engine import Engine, EngineModel, SamplingParams, SpecStats, Speculator  # noqa: E402
from serving.engine.draft_head import load_head, read_card  # noqa: E402
from serving.engine.policy import load_model, stop_ids_of  # noqa: E402


def run_prompts(
    engine: Engine, prompts: list[list[int]], *, max_new_tokens: int, stop: tuple[int, ...]
) -> dict[str, Any]:
    """Greedy completions of every prompt, one at a time: ids, decode seconds and speculation
    counts."""
    outputs, decode_s, tokens = [], 0.0, 0
    spec = SpecStats()
    for prompt in prompts:
        done = engine.generate(prompt, SamplingParams(max_new_tokens=max_new_tokens, stop_ids=stop))
        outputs.append(done.ids)
        if len(done.ids) > 1 and done.ttft_s is not None:
            decode_s += done.latency_s - done.ttft_s
            tokens += len(done.ids) - 1
        if done.spec is not None:
            spec.add(done.spec)
    return {
        "ids": outputs,
        "decode_tok_s": tokens / decode_s if decode_s else None,
        "tokens": tokens,
        "spec": spec.to_dict() if spec.cycles else None,
    }


def acceptance_row(label: str, result: dict[str, Any]) -> str:
    s = result["spec"]
    per = " / ".join(f"{r:.2f}" for r in s["acceptance_rate_per_position"])
    return (
        f"| {label} | {s['acceptance_length']:.2f} | "
        f"{s['acceptance_rate']:.3f} | {per} | {s['cycles']} | "
        f"{result['decode_tok_s']:.1f} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policy", default="runs/demo-sft-2/final", help="the trained checkpoint")
    parser.add_argument(
        "--head", default="runs/mtp/demo-readapted/final", help="its re-adapted head"
    )
    parser.add_argument(
        "--base-policy", default="local", help="the base model ('local' = SmolLM2-135M)"
    )
    parser.add_argument(
        "--base-head", default="runs/mtp/base-head/final", help="the head adapted to the base model"
    )
    parser.add_argument(
        "--prompts", type=int, default=12, help="replay cases whose first agent call is decoded"
    )
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--steps", type=int, default=0, help="draft steps K (0: the head's own)")
    parser.add_argument(
        "--agent-cases", type=int, default=10, help="measured cases of the complete agent (0: skip)"
    )
    parser.add_argument(
        "--agent-budget-s",
        type=float,
        default=0,
        help=(
            "also replay under the demo Harness with this "
            "trajectory budget (0: only its own 10 s), to see the "
            "head's effect on requests that are not all cut at the budget"
        ),
    )
    parser.add_argument("--agent-only", action="store_true", help="only the complete agent part")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--world", default=str(ROOT / "var" / "world"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    cases = Path(args.world) / "replay.jsonl"
    if not cases.is_file():
        from evaluation.world.sets import generate

        generate(out=Path(args.world), seed=7)
    policy, base = resolve_checkpoint(args.policy), resolve_checkpoint(args.base_policy)
    steps = args.steps or None
    if args.agent_only:
        agent_tables(policy, args.head, cases, args)
        return 0
    results: dict[str, dict[str, Any]] = {}
    rows = []
    for label, checkpoint, head in (
        ("base head on the base model", base, args.base_head),
        ("base head on the trained checkpoint (stale)", policy, args.base_head),
        ("re-adapted head on the trained checkpoint", policy, args.head),
    ):
        model, tokenizer = load_model(checkpoint)
        prompts = agent_prompts(checkpoint, cases, args.prompts)
        stop = stop_ids_of(model, tokenizer)
        engine_model = EngineModel(model)
        key = str(checkpoint)
        if (
            key not in results
        ):  # head off: the reference outputs and decode speed of this checkpoint
            plain = Engine(engine_model, threads=args.threads, name="plain")
            plain.generate(prompts[0][:64], SamplingParams(max_new_tokens=4))  # warm-up
            results[key] = run_prompts(
                plain, prompts, max_new_tokens=args.max_new_tokens, stop=stop
            )
            plain.close()
        engine = Engine(
            engine_model,
            threads=args.threads,
            name="mtp",
            draft=Speculator(load_head(head, model), steps=steps),
        )
        engine.generate(prompts[0][:64], SamplingParams(max_new_tokens=4))
        result = run_prompts(engine, prompts, max_new_tokens=args.max_new_tokens, stop=stop)
        engine.close()
        result["identical"] = sum(
            a == b for a, b in zip(result["ids"], results[key]["ids"], strict=True)
        )
        result["head_off_tok_s"] = results[key]["decode_tok_s"]
        result["card"] = read_card(head).get("acceptance_held_out")
        rows.append((label, checkpoint, head, result))
        print(f"measured: {label}", file=sys.stderr, flush=True)

    n = args.prompts
    print(
        f"\n### Stale head (greedy, K = {len(rows[0][3]['spec']['acceptance_rate_per_position'])}, "
        f"first agent call of {n} replay cases, up to {args.max_new_tokens} new tokens)\n"
    )
    print(
        "| head -> policy | acceptance length | acceptance "
        "rate | rate per draft position | cycles | "
        "decode tok/s, head on |"
    )
    print("|---|---:|---:|---|---:|---:|")
    for label, _checkpoint, _head, result in rows:
        print(acceptance_row(label, result))
    print(
        "\nheld-out acceptance in each head's card (its own rollouts, offline): "
        + "; ".join(
            f"{Path(h).parent.name}: {r['card']['acceptance_length'] if r['card'] else 'n/a'}"
            for _label, _c, h, r in rows[::2]
        )
    )

    label, checkpoint, head, on = rows[2]
    off = results[str(checkpoint)]
    print(f"\n### Speed: {checkpoint} with {head}, batch 1, {args.threads} threads\n")
    print("| | decode tok/s | tokens decoded | outputs identical to head off |")
    print("|---|---:|---:|---:|")
    print(f"| head off | {off['decode_tok_s']:.1f} | {off['tokens']} | (reference) |")
    print(f"| head on | {on['decode_tok_s']:.1f} | {on['tokens']} | {on['identical']} of {n} |")
    print(f"\ndecode speed-up with the head: x{on['decode_tok_s'] / off['decode_tok_s']:.2f}")

    if args.agent_cases:
        agent_tables(checkpoint, head, cases, args)
    json.dump(
        {label: {k: v for k, v in r.items() if k != "ids"} for label, _c, _h, r in rows},
        sys.stderr,
        indent=1,
        default=str,
    )
    print(file=sys.stderr)
    return 0


def _budget_harness(budget_s: float) -> Path:
    """The demo Harness with another trajectory budget (a temporary folder)."""
    import tempfile

    import yaml

    from harness import demo_harness_dir, load_dir
    from harness.yamlio import load_yaml

    bundle = load_dir(demo_harness_dir())
    prompt, _lines, _problems = load_yaml(bundle.files["prompt.yaml"], file="prompt.yaml")
    prompt["constraints"]["trajectory_budget_s"] = budget_s
    out = Path(tempfile.mkdtemp(prefix="mtp-budget-")) / "livestream-avatar"
    bundle.with_files(
        {"prompt.yaml": yaml.safe_dump(prompt, sort_keys=False, allow_unicode=True)}
    ).dump_dir(out)
    return out


def agent_tables(checkpoint: Path, head: str, cases: Path, args) -> None:
    budgets = [None] + ([args.agent_budget_s] if args.agent_budget_s else [])
    for budget in budgets:
        harness_dir = _budget_harness(budget) if budget else None
        agents = {}
        # the CPU route's default (llama.cpp, which cannot run our head) against the torch engine
        # with it
        for name, quantization, draft in (
            ("llama.cpp (no head)", "gguf", None),
            ("head off", "none", None),
            ("head on", "none", head),
        ):
            agents[name] = complete_agent(
                checkpoint,
                quantization,
                cases,
                args.agent_cases,
                args.threads,
                draft_head=draft,
                harness_dir=harness_dir,
            )
            print(f"measured: complete agent, {name}", file=sys.stderr, flush=True)
        budget_text = (
            f"a {budget:g} s trajectory budget (not the Harness's)"
            if budget
            else "the Harness's 10 s budget"
        )
        print(
            f"\n### Complete agent: replay C=1, {args.agent_cases} cases, {budget_text}, "
            "temperature 1.0 / top-p 0.95\n"
        )
        print("| | P50 s | P95 s | within 15 s | success | fallback | acceptance length |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name, result in agents.items():
            level = result["summary"]["levels"]["1"]
            spec = level.get("speculative") or {}

            def fmt(value, pattern="{:.2f}"):
                return "n/a" if value is None else pattern.format(value)

            print(
                f"| {name} | {fmt(level.get('wall_p50_s'))} | {fmt(level.get('wall_p95_s'))} | "
                f"{fmt(level.get('share_within_sla'), '{:.0%}')} "
                f"| {fmt(level.get('success_rate'), '{:.0%}')} | "
                f"{fmt(level.get('fallback_rate'), '{:.0%}')} "
                f"| {fmt(spec.get('acceptance_length'))} |"
            )
        p50 = [
            agents[k]["summary"]["levels"]["1"].get("wall_p50_s")
            for k in ("head off", "head on", "llama.cpp (no head)")
        ]
        if all(p50):
            print(
                f"\nP50 head on / head off: {p50[1] / p50[0]:.2f}; "
                f"head on / llama.cpp: {p50[1] / p50[2]:.2f}"
            )
        print("run folders: " + ", ".join(a["run"] for a in agents.values()), flush=True)


if __name__ == "__main__":
    sys.exit(main())
