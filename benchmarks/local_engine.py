"""Every CPU route side by side in one process: transformers' generate, the torch engine, llama.cpp.

Prints, for the default model (or --checkpoint): prefill tok/s on a real agent
prompt of the demo Harness, decode tok/s at batch 1, the aggregate decode tok/s of
8 concurrent requests sharing the Harness prefix, the time to first token once the
prefix is cached, and the agreement of greedy outputs with the plain fp32 path on
the replay set's first model calls; then the complete agent (the deployment
replay through the CPU serving route on the engine, C=1, the Harness's own 10 s
budget, the report's sampling settings) with P50 / P95 / share within 15 s.
llama.cpp (``serving.llama_cpp``) gets the same rows for the shipped GGUF and the
checkpoint's exports (Q8_0, Q4_0, F16), with flash attention off and on, and its greedy agreement
with fp32 (the quality side of the quantization choice). Last, the complete agent in process per
route (llama.cpp, the torch engine fp32 and int8) on the replay cases: P50, P95, the share of
requests whose gold is a reply answered without the Harness's fallback, first-call and later-call
TTFT and what later calls prefill, at C=1 and C=4. Every section prints the machine's load average.

    .venv/bin/python benchmarks/local_engine.py --quick                # minutes: the main rows, 6
    agent cases .venv/bin/python benchmarks/local_engine.py                        # default model,
    ~30 min on 2 cores .venv/bin/python benchmarks/local_engine.py --checkpoint
    runs/demo-sft-2/final --agent-cases 40 .venv/bin/python benchmarks/local_engine.py --checkpoint
    tiny --quick --agent-cases 2   # plumbing .venv/bin/python benchmarks/local_engine.py
    --checkpoint runs/demo-sft-2/final --quick \
        --agent-cases 20 --agent-concurrency 1 4       # the main rows, then the complete agent as
        asked
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

import torch  # noqa: E402

from harness import demo_harness_dir, load_dir  # noqa: E402
from harness.checkpoints import resolve_checkpoint  # noqa: E402
from harness.policies.base import Policy, PolicyOutput  # noqa: E402
from serving.engine import Engine, EngineModel, SamplingParams  # noqa: E402
from serving.engine.policy import TransformersPolicy, load_model, stop_ids_of  # noqa: E402
from serving.engine.prefix import common_prefix  # noqa: E402

DECODE_TOKENS = 64


class _Capture(Policy):
    """Records the messages of each request's first model call and answers with a plain reply."""

    name = "capture"

    def __init__(self) -> None:
        self.first_calls: list[list[dict[str, Any]]] = []
        self._fresh = False

    def begin_request(self, request_id: str) -> None:
        self._fresh = True

    def generate(self, messages, *, tools=None, settings=None) -> PolicyOutput:
        if self._fresh:
            self.first_calls.append([dict(m) for m in messages])
            self._fresh = False
        return PolicyOutput(text="Thanks for asking!", finish_reason="stop")


def agent_prompts(checkpoint: Path, cases_path: Path, n: int, bundle=None) -> list[list[int]]:
    """The rendered first model call of the agent on the first ``n`` replay cases (the demo
    Harness)."""
    from harness.livestream import Catalogue, demo_catalogue
    from harness.runtime import Agent
    from serving.replay_cases import load_manifest

    manifest = load_manifest(cases_path, warmup=0, measured=n)
    catalogue = (
        Catalogue.load(manifest.catalogue_path) if manifest.catalogue_path else demo_catalogue()
    )
    capture = _Capture()
    agent = Agent(
        bundle=bundle or load_dir(demo_harness_dir()),
        policy=capture,
        catalogue=catalogue,
        connect_mcp=False,
    )
    for case in manifest.measured:
        agent.run(case["request"])
    renderer = TransformersPolicy(checkpoint, engine="transformers")
    return [renderer.render(messages) for messages in capture.first_calls]


def plain_generate(
    model, prompt: list[int], n: int, stop: bool = False
) -> tuple[list[int], float, float]:
    """(new ids, seconds to the first token, seconds in all) from transformers' generate, fp32."""
    from serving.engine.policy import _FirstTokenClock

    clock = _FirstTokenClock()
    inputs = torch.tensor([prompt])
    started = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(
            inputs,
            attention_mask=torch.ones_like(inputs),
            max_new_tokens=n,
            min_new_tokens=0 if stop else n,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
            streamer=clock,
            pad_token_id=2,
        )
    total = time.perf_counter() - started
    return (
        out[0, len(prompt) :].tolist(),
        (clock.first_token_at or time.perf_counter()) - started,
        total,
    )


NEXT_ROUND = (
    '<|im_end|>\n<|im_start|>user\n<tool_result name="get_product">{"id": 3, "name": "Tenko Lite '
    'Wireless Earbuds", "price": 629, "stock": 0, "promotion": null}</tool_result><|im_end|>\n'
    "<|im_start|>assistant\n"
)


def next_round(tokenizer, prompt: list[int], reply: list[int]) -> list[int]:
    """The agent's second model call of a request: the first prompt, its reply and a tool result."""
    return prompt + reply + tokenizer.encode(NEXT_ROUND, add_special_tokens=False)


def measure_plain(model, tokenizer, prompts: list[list[int]]) -> dict[str, float]:
    prompt = prompts[0]
    plain_generate(model, prompt[:64], 4)  # warm-up
    _ids, ttft, _total = plain_generate(model, prompt, 1)
    ids, ttft2, total = plain_generate(model, prompt, DECODE_TOKENS)
    _ids, short_ttft, short_total = plain_generate(model, prompt[:64], DECODE_TOKENS)
    _ids, ttft_new, _total = plain_generate(model, prompts[1], 1)
    _ids, ttft_next, _total = plain_generate(model, next_round(tokenizer, prompt, ids[:32]), 1)
    return {
        "prefill_tok_s": len(prompt) / ttft,
        "decode_tok_s": (DECODE_TOKENS - 1) / (total - ttft2),
        "decode_short_tok_s": (DECODE_TOKENS - 1) / (short_total - short_ttft),
        "ttft_new_s": ttft_new,
        "ttft_next_s": ttft_next,
        "batch8_tok_s": float("nan"),
    }


def measure_engine(
    model, tokenizer, quantization: str, prompts: list[list[int]]
) -> dict[str, float]:
    engine = Engine(EngineModel(model, quantization=quantization), prefix_cache=False)
    prompt = prompts[0]
    engine.generate(prompt[:64], SamplingParams(max_new_tokens=4))  # warm-up
    done = engine.generate(prompt, SamplingParams(max_new_tokens=1))
    prefill = len(prompt) / done.ttft_s
    done = engine.generate(prompt, SamplingParams(max_new_tokens=DECODE_TOKENS))
    decode = (DECODE_TOKENS - 1) / (done.latency_s - done.ttft_s)
    short = engine.generate(prompt[:64], SamplingParams(max_new_tokens=DECODE_TOKENS))
    decode_short = (DECODE_TOKENS - 1) / (short.latency_s - short.ttft_s)
    engine.close()
    # the prefix store: a new request under the same Harness, then a request's next round
    shared = Engine(engine.model)
    first = shared.generate(prompt, SamplingParams(max_new_tokens=32))
    new = shared.generate(prompts[1], SamplingParams(max_new_tokens=1))
    following = shared.generate(
        next_round(tokenizer, prompt, first.ids), SamplingParams(max_new_tokens=1)
    )
    # 8 concurrent requests (the store already holds the Harness prefix)
    batch = [
        shared.submit(p, SamplingParams(max_new_tokens=DECODE_TOKENS)) for p in _eight(prompts)
    ]
    results = [r.result() for r in batch]
    firsts = max(r.first_token_at for r in results)
    ends = max(r.finished_at for r in results)
    tokens_after_first = sum(len(r.ids) - 1 for r in results)
    figures = {
        "prefill_tok_s": prefill,
        "decode_tok_s": decode,
        "decode_short_tok_s": decode_short,
        "ttft_new_s": new.ttft_s,
        "new_cached": new.cached_tokens,
        "new_prompt": new.prompt_tokens,
        "ttft_next_s": following.ttft_s,
        "next_cached": following.cached_tokens,
        "next_prompt": following.prompt_tokens,
        "batch8_tok_s": tokens_after_first / (ends - firsts),
        "max_batch": shared.stats.max_batch_seen,
    }
    shared.close()
    return figures


def _eight(prompts: list[list[int]]) -> list[list[int]]:
    return [prompts[i % len(prompts)] for i in range(8)]


def agreement(
    model,
    tokenizer,
    quantization: str,
    prompts: list[list[int]],
    reference: list[list[int]],
    n: int,
) -> dict[str, float]:
    """Greedy outputs on the agent prompts vs the plain fp32 path: whole-output matches and shared
    prefix."""
    engine = Engine(EngineModel(model, quantization=quantization))
    stop = stop_ids_of(model, tokenizer)
    same = 0
    prefix_share = []
    for prompt, want in zip(prompts, reference, strict=True):
        got = engine.generate(prompt, SamplingParams(max_new_tokens=n, stop_ids=stop)).ids
        same += got == want
        k = 0
        while k < min(len(got), len(want)) and got[k] == want[k]:
            k += 1
        prefix_share.append(k / max(1, len(want)))
    return {"identical": same / len(prompts), "common_prefix": statistics.fmean(prefix_share)}


def complete_agent(
    checkpoint: Path,
    quantization: str,
    cases_path: Path,
    n: int,
    threads: int,
    draft_head: str | None = None,
    harness_dir: Path | None = None,
) -> dict[str, Any]:
    """The deployment replay on the engine's CPU serving route: C=1, the Harness's own budget."""
    from serving.endpoint import GenerationSettings
    from serving.profiles import profile_from_mapping
    from serving.replay import ReplayPlan
    from serving.service import replay_run

    mapping = {
        "engine": "local",
        "checkpoint": str(checkpoint),
        "quantization": quantization,
        "threads": threads,
    }
    if draft_head:
        mapping["draft_head"] = str(draft_head)
    profile = profile_from_mapping(
        f"engine-{quantization}{'-mtp' if draft_head else ''}",
        mapping,
        source="benchmarks/local_engine.py",
    )
    run_dir = replay_run(
        profile=profile,
        harness_dir=harness_dir or demo_harness_dir(),
        cases_path=cases_path,
        plan=ReplayPlan(concurrency=(1,), warmup=1, measured=n, request_timeout_s=60.0),
        settings=GenerationSettings(temperature=1.0, top_p=0.95, max_tokens=256),
        out_root=ROOT / "runs" / "serving",
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return {"run": str(run_dir), "summary": summary}


def measure_llama(
    gguf: Path, prompts: list[list[int]], tokenizer, threads: int, flash_attn: bool
) -> dict[str, float]:
    """The figures of the engine rows for llama.cpp (xllamacpp) on one GGUF file, 8 slots."""
    from serving.llama_cpp import LlamaServer

    server = LlamaServer(gguf, slots=8, threads=threads, flash_attn=flash_attn)
    prompt = prompts[0]
    server.complete(prompt[:64], max_new_tokens=4)  # warm-up
    done = server.complete(prompt, max_new_tokens=1)  # a fresh slot: the whole prompt is prefilled
    prefill = (len(prompt) - done.cached_tokens) / done.ttft_s
    # decode after the agent prompt (cached in a slot now)
    long = server.complete(prompt, max_new_tokens=DECODE_TOKENS, temperature=0.0)
    decode = (len(long.ids) - 1) / (long.finished_at - long.first_token_at)
    short = server.complete(prompt[:64], max_new_tokens=DECODE_TOKENS)
    decode_short = (len(short.ids) - 1) / (short.finished_at - short.first_token_at)
    first = server.complete(prompt, max_new_tokens=32)
    # the request's next round comes first here: a new request in between may take its slot (see
    # LlamaServer._take_slot); the complete agent at C=4 below measures that interference
    following = server.complete(next_round(tokenizer, prompt, first.ids), max_new_tokens=1)
    new = server.complete(prompts[1], max_new_tokens=1)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(lambda p: server.complete(p, max_new_tokens=DECODE_TOKENS), _eight(prompts))
        )
    firsts = max(r.first_token_at for r in results)
    ends = max(r.finished_at for r in results)
    figures = {
        "prefill_tok_s": prefill,
        "decode_tok_s": decode,
        "decode_short_tok_s": decode_short,
        "ttft_new_s": new.ttft_s,
        "new_cached": new.cached_tokens,
        "new_prompt": new.prompt_tokens,
        "ttft_next_s": following.ttft_s,
        "next_cached": following.cached_tokens,
        "next_prompt": following.prompt_tokens,
        "batch8_tok_s": sum(len(r.ids) - 1 for r in results) / (ends - firsts),
    }
    server.close()
    return figures


def llama_agreement(
    gguf: Path, prompts: list[list[int]], reference: list[list[int]], n: int, threads: int
) -> dict[str, float]:
    """Greedy outputs of a GGUF file on the agent prompts vs the plain fp32 path (a quality proxy
    for its quantization)."""
    from serving.llama_cpp import LlamaServer

    server = LlamaServer(gguf, slots=1, threads=threads)
    same, prefix_share = 0, []
    for prompt, want in zip(prompts, reference, strict=True):
        got = server.complete(prompt, max_new_tokens=n).ids
        want = (
            [t for t in want if t != 2] if got and got[-1] != 2 else want
        )  # the end token is not streamed
        same += got == want
        k = 0
        while k < min(len(got), len(want)) and got[k] == want[k]:
            k += 1
        prefix_share.append(k / max(1, len(want)))
    server.close()
    return {"identical": same / len(prompts), "common_prefix": statistics.fmean(prefix_share)}


def agent_in_process(
    policy: Policy, cases_path: Path, n: int, concurrency: int = 1
) -> dict[str, Any]:
    """The complete agent in process on the first ``n`` replay cases (after one warm-up case): the
    demo Harness, its own 10 s budget, the report's sampling settings (temperature 1.0, top-p 0.95),
    C requests at a time. Latency is the request's wall time; a request "answered" when it replied
    (or stayed silent where the gold says so) without the Harness's fallback."""
    from concurrent.futures import ThreadPoolExecutor

    from evaluation.scoring import outcome_and_reason
    from harness.livestream import Catalogue, demo_catalogue
    from harness.mcp_registry import McpRegistry
    from harness.policies import GenerationSettings
    from harness.runtime import Agent
    from serving.replay_cases import load_manifest

    manifest = load_manifest(cases_path, warmup=1, measured=n)
    catalogue = (
        Catalogue.load(manifest.catalogue_path) if manifest.catalogue_path else demo_catalogue()
    )
    settings = GenerationSettings(temperature=1.0, top_p=0.95, max_new_tokens=256)
    bundle = load_dir(demo_harness_dir())
    agents = [
        Agent(
            bundle=bundle,
            policy=policy,
            catalogue=catalogue,
            generation=settings,
            mcp_registry=McpRegistry.default(),
        )
        for _ in range(concurrency)
    ]
    free = list(agents)

    def one(case: dict[str, Any]) -> dict[str, Any]:
        agent = free.pop()
        try:
            started = time.perf_counter()
            traj = agent.run(case["request"]).to_dict()
            return {"latency": time.perf_counter() - started, "traj": traj, "case": case}
        finally:
            free.append(agent)

    try:
        one(manifest.warmup[0])
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            rows = list(pool.map(one, manifest.measured))
        wall = time.perf_counter() - started
    finally:
        for agent in agents:
            agent.close()
    latencies = sorted(r["latency"] for r in rows)
    first_ttft, later_ttft, later_cached, later_prompt = [], [], [], []
    answered = replies = 0
    outcomes: dict[str, int] = {}
    for r in rows:
        outcome, _reason = outcome_and_reason(r["traj"])
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if r["case"].get("gold", {}).get("route", "public") == "public":
            replies += 1
            answered += outcome == "replied"
        calls = [c for c in r["traj"]["model_calls"] if c.get("ttft_s") is not None]
        if calls:
            first_ttft.append(calls[0]["ttft_s"])
        for c in calls[1:]:
            later_ttft.append(c["ttft_s"])
            later_cached.append(c.get("cached_tokens") or 0)
            later_prompt.append(c.get("input_tokens") or 0)
    return {
        "n": len(rows),
        "concurrency": concurrency,
        "wall_s": wall,
        "p50_s": _quantile(latencies, 0.5),
        "p95_s": _quantile(latencies, 0.95),
        "answered_share": answered / replies if replies else float("nan"),
        "replies": replies,
        "outcomes": outcomes,
        "first_ttft_s": statistics.median(first_ttft) if first_ttft else float("nan"),
        "later_ttft_s": statistics.median(later_ttft) if later_ttft else float("nan"),
        "later_prefilled": (
            statistics.median(p - c for p, c in zip(later_prompt, later_cached, strict=True))
            if later_prompt
            else float("nan")
        ),
    }


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _fmt(value: float, spec: str, unit: str = "") -> str:
    return "-" if value != value else f"{value:{spec}}{unit}"  # NaN: not measured on that path


def _load() -> str:
    return "load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--checkpoint", default="local", help="'local' (default model), 'tiny' or a folder"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="minutes: no plain-generate row, llama.cpp's "
        "shipped/Q8_0 files only (flash attention as "
        "the route runs it), fewer prompts, "
        "the complete agent on llama.cpp and the fp32 engine with 6 cases unless told otherwise",
    )
    parser.add_argument(
        "--agree-prompts", type=int, default=12, help="agent prompts for the greedy agreement"
    )
    parser.add_argument("--agree-tokens", type=int, default=48)
    parser.add_argument(
        "--agent-cases",
        type=int,
        default=None,
        help="measured replay cases per route (default 20, 6 with --quick; 0: skip)",
    )
    parser.add_argument(
        "--agent-concurrency",
        type=int,
        nargs="*",
        default=None,
        help="concurrency levels of the complete agent (default 1 4, 1 with --quick)",
    )
    parser.add_argument(
        "--agent-routes",
        nargs="*",
        default=None,
        help="routes of the complete agent: llama, torch-fp32, torch-int8 (default all three; "
        "no int8 with --quick)",
    )
    parser.add_argument("--world", default=str(ROOT / "var" / "world"))
    args = parser.parse_args()
    if args.quick:  # the main rows only; the complete agent as asked, else a short default
        args.agree_prompts, args.agree_tokens = (
            min(args.agree_prompts, 4),
            min(args.agree_tokens, 32),
        )
    if args.agent_cases is None:
        args.agent_cases = 6 if args.quick else 20
    if args.agent_concurrency is None:
        args.agent_concurrency = [1] if args.quick else [1, 4]
    if args.agent_routes is None:
        args.agent_routes = ["llama", "torch-fp32"] + ([] if args.quick else ["torch-int8"])
    torch.set_num_threads(args.threads)
    os.environ.setdefault("HARNESS_LLAMA_THREADS", str(args.threads))

    from serving.gguf import DEFAULT_QUANTIZATION, gguf_for_checkpoint
    from serving.llama_cpp import default_flash_attn

    checkpoint = resolve_checkpoint(args.checkpoint)
    cases = Path(args.world) / "replay.jsonl"
    if not cases.is_file():
        from evaluation.world.sets import generate

        generate(out=Path(args.world), seed=7)
    model, tokenizer = load_model(checkpoint)
    prompts = agent_prompts(checkpoint, cases, max(args.agree_prompts, 2))
    print(
        f"checkpoint {checkpoint} · {args.threads} threads "
        f"· agent prompts of {min(map(len, prompts))}-"
        f"{max(map(len, prompts))} tokens (demo Harness, replay set) · {_load()}",
        flush=True,
    )

    rows: dict[str, dict[str, float]] = {}
    if not args.quick:
        rows["transformers fp32 generate"] = measure_plain(model, tokenizer, prompts)
        print(f"measured: plain generate · {_load()}", flush=True)
    for quantization in ("none",) if args.quick else ("none", "int8"):
        name = f"engine {'fp32' if quantization == 'none' else quantization}"
        rows[name] = measure_engine(model, tokenizer, quantization, prompts)
        print(f"measured: {name} · {_load()}", flush=True)
    ggufs: dict[str, Path] = {}
    default = gguf_for_checkpoint(checkpoint)
    ggufs[f"llama.cpp {default.name.rsplit('.', 2)[-2]}"] = default
    for fmt in (DEFAULT_QUANTIZATION,) if args.quick else (DEFAULT_QUANTIZATION, "Q4_0", "F16"):
        path = gguf_for_checkpoint(checkpoint, quantization=fmt)
        if path != default:
            ggufs[f"llama.cpp {fmt} (export)"] = path
    for name, path in ggufs.items():
        for flash in (default_flash_attn(),) if args.quick else (False, True):
            label = f"{name}, flash attention {'on' if flash else 'off'}"
            rows[label] = measure_llama(path, prompts, tokenizer, args.threads, flash)
            print(f"measured: {label} · {_load()}", flush=True)
    stop = stop_ids_of(model, tokenizer)
    reference = [
        plain_generate(model, p, args.agree_tokens, stop=True)[0]
        for p in prompts[: args.agree_prompts]
    ]
    for cut, ids in enumerate(reference):
        for k, token in enumerate(ids):
            if token in stop:
                reference[cut] = ids[: k + 1]
                break
    agree = {
        f"engine {'fp32' if q == 'none' else q}": agreement(
            model, tokenizer, q, prompts[: args.agree_prompts], reference, args.agree_tokens
        )
        for q in (("none",) if args.quick else ("none", "int8"))
    }
    for name, path in ggufs.items():
        agree[name] = llama_agreement(
            path, prompts[: args.agree_prompts], reference, args.agree_tokens, args.threads
        )

    print(
        f"\n| path | prefill tok/s | decode tok/s after the {len(prompts[0])}-token agent prompt | "
        "decode tok/s after 64 tokens | aggregate decode tok/s, 8 concurrent requests | "
        "TTFT, a new request | TTFT, the request's next round | greedy vs fp32 generate |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        key = next((k for k in agree if name.startswith(k)), None)
        agree_text = (
            f"{agree[key]['identical']:.0%} identical, "
            f"{agree[key]['common_prefix']:.0%} common prefix"
            if key
            else "(reference)"
        )
        if "new_cached" in r:
            new = f"{r['ttft_new_s']:.2f} s ({r['new_cached']} of {r['new_prompt']} cached)"
            following = (
                f"{r['ttft_next_s']:.2f} s ({r['next_cached']} of {r['next_prompt']} cached)"
            )
        else:
            new, following = f"{r['ttft_new_s']:.2f} s", f"{r['ttft_next_s']:.2f} s"
        print(
            f"| {name} | {r['prefill_tok_s']:.0f} | "
            f"{r['decode_tok_s']:.1f} | {r['decode_short_tok_s']:.1f} | "
            f"{_fmt(r['batch8_tok_s'], '.1f')} | {new} | {following} | {agree_text} |"
        )
    shared = min(common_prefix(torch.tensor(prompts[0]), torch.tensor(p)) for p in prompts[1:])
    print(
        "\nthe agent prompts of different requests share "
        f"their first {shared} of {len(prompts[0])} tokens "
        "(demo Harness block order); greedy agreement "
        f"over {args.agree_prompts} agent prompts, up to "
        f"{args.agree_tokens} new tokens · {_load()}",
        flush=True,
    )

    if args.agent_cases:
        from serving.llama_cpp import LlamaCppPolicy

        print(
            f"\ncomplete agent in process, {args.agent_cases} "
            "replay cases, demo Harness and its 10 s budget, "
            "temperature 1.0 / top-p 0.95"
        )
        print(
            "| route | C | P50 s | P95 s | answered without "
            "fallback (gold: a reply) | first-call TTFT | "
            "later-call TTFT | later call prefills (median tokens) | outcomes | wall s | load |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for route in args.agent_routes:
            for concurrency in args.agent_concurrency:
                if route == "llama":
                    policy: Policy = LlamaCppPolicy(checkpoint, gguf=default, name="llama")
                else:
                    policy = TransformersPolicy(
                        checkpoint,
                        name=route,
                        quantization="int8" if route == "torch-int8" else "none",
                    )
                r = agent_in_process(policy, cases, args.agent_cases, concurrency)
                print(
                    f"| {route} | {concurrency} | {r['p50_s']:.2f} | {r['p95_s']:.2f} | "
                    f"{_fmt(r['answered_share'], '.0%')} of {r['replies']} "
                    f"| {_fmt(r['first_ttft_s'], '.2f', ' s')} | "
                    f"{_fmt(r['later_ttft_s'], '.2f', ' s')} "
                    f"| {_fmt(r['later_prefilled'], '.0f')} | "
                    f"{json.dumps(r['outcomes'])} | {r['wall_s']:.0f} | {_load()} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
