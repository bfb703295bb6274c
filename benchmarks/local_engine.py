"""The local engine against transformers' plain generate, side by side in one process.

Prints, for the default model (or --checkpoint): prefill tok/s on a real agent
prompt of the demo Harness, decode tok/s at batch 1, the aggregate decode tok/s of
8 concurrent requests sharing the Harness prefix, the time to first token once the
prefix is cached, and the agreement of greedy outputs with the plain fp32 path on
the replay set's first model calls; then the complete agent (the deployment
replay through the CPU serving route on the engine, C=1, the Harness's own 10 s
budget, the report's sampling settings) with P50 / P95 / share within 15 s.
If ``llama_cpp`` is importable and --gguf names a file, llama.cpp's decode is added.

    .venv/bin/python benchmarks/local_engine.py                        # default model, ~10 min on 2 cores
    .venv/bin/python benchmarks/local_engine.py --checkpoint runs/demo-sft-2/final --agent-cases 20
    .venv/bin/python benchmarks/local_engine.py --checkpoint tiny --agent-cases 2   # plumbing, seconds
"""

from __future__ import annotations

import argparse
import json
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
from harness.engine import Engine, EngineModel, SamplingParams  # noqa: E402
from harness.engine.prefix import common_prefix  # noqa: E402
from harness.policies.base import Policy, PolicyOutput  # noqa: E402
from harness.policies.local import TransformersPolicy, load_model, stop_ids_of  # noqa: E402

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


def static_blocks_first():
    """The demo Harness with its prompt blocks that do not depend on the request moved first."""
    import yaml

    from harness.yamlio import load_yaml

    bundle = load_dir(demo_harness_dir())
    prompt, _lines, _problems = load_yaml(bundle.files["prompt.yaml"], file="prompt.yaml")
    per_request = {"products", "room", "faq"}
    prompt["blocks"] = ([b for b in prompt["blocks"] if b["id"] not in per_request]
                        + [b for b in prompt["blocks"] if b["id"] in per_request])
    return bundle.with_files({"prompt.yaml": yaml.safe_dump(prompt, sort_keys=False, allow_unicode=True)})


def agent_prompts(checkpoint: Path, cases_path: Path, n: int, bundle=None) -> list[list[int]]:
    """The rendered first model call of the agent on the first ``n`` replay cases (the demo Harness)."""
    from harness.livestream import Catalogue, demo_catalogue
    from harness.runtime import Agent
    from serving.cases import load_manifest

    manifest = load_manifest(cases_path, warmup=0, measured=n)
    catalogue = Catalogue.load(manifest.catalogue_path) if manifest.catalogue_path else demo_catalogue()
    capture = _Capture()
    agent = Agent(bundle=bundle or load_dir(demo_harness_dir()), policy=capture, catalogue=catalogue,
                  connect_mcp=False)
    for case in manifest.measured:
        agent.run(case["request"])
    renderer = TransformersPolicy(checkpoint, engine="transformers")
    return [renderer.render(messages) for messages in capture.first_calls]


def plain_generate(model, prompt: list[int], n: int, stop: bool = False) -> tuple[list[int], float, float]:
    """(new ids, seconds to the first token, seconds in all) from transformers' generate, fp32."""
    from harness.policies.local import _FirstTokenClock

    clock = _FirstTokenClock()
    inputs = torch.tensor([prompt])
    started = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(inputs, attention_mask=torch.ones_like(inputs), max_new_tokens=n,
                             min_new_tokens=0 if stop else n,
                             do_sample=False, temperature=None, top_p=None, top_k=None, streamer=clock,
                             pad_token_id=2)
    total = time.perf_counter() - started
    return out[0, len(prompt):].tolist(), (clock.first_token_at or time.perf_counter()) - started, total


NEXT_ROUND = ('<|im_end|>\n<|im_start|>user\n<tool_result name="get_product">{"id": 3, "name": "Tenko Lite '
              'Wireless Earbuds", "price": 629, "stock": 0, "promotion": null}</tool_result><|im_end|>\n'
              '<|im_start|>assistant\n')


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
    return {"prefill_tok_s": len(prompt) / ttft, "decode_tok_s": (DECODE_TOKENS - 1) / (total - ttft2),
            "decode_short_tok_s": (DECODE_TOKENS - 1) / (short_total - short_ttft),
            "ttft_new_s": ttft_new, "ttft_next_s": ttft_next, "batch8_tok_s": float("nan")}


def measure_engine(model, tokenizer, quantization: str, prompts: list[list[int]]) -> dict[str, float]:
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
    following = shared.generate(next_round(tokenizer, prompt, first.ids), SamplingParams(max_new_tokens=1))
    # 8 concurrent requests (the store already holds the Harness prefix)
    batch = [shared.submit(p, SamplingParams(max_new_tokens=DECODE_TOKENS)) for p in _eight(prompts)]
    results = [r.result() for r in batch]
    firsts = max(r.first_token_at for r in results)
    ends = max(r.finished_at for r in results)
    tokens_after_first = sum(len(r.ids) - 1 for r in results)
    figures = {"prefill_tok_s": prefill, "decode_tok_s": decode, "decode_short_tok_s": decode_short,
               "ttft_new_s": new.ttft_s, "new_cached": new.cached_tokens, "new_prompt": new.prompt_tokens,
               "ttft_next_s": following.ttft_s, "next_cached": following.cached_tokens,
               "next_prompt": following.prompt_tokens,
               "batch8_tok_s": tokens_after_first / (ends - firsts), "max_batch": shared.stats.max_batch_seen}
    shared.close()
    return figures


def _eight(prompts: list[list[int]]) -> list[list[int]]:
    return [prompts[i % len(prompts)] for i in range(8)]


def agreement(model, tokenizer, quantization: str, prompts: list[list[int]], reference: list[list[int]],
              n: int) -> dict[str, float]:
    """Greedy outputs on the agent prompts vs the plain fp32 path: whole-output matches and shared prefix."""
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


def complete_agent(checkpoint: Path, quantization: str, cases_path: Path, n: int, threads: int,
                   draft_head: str | None = None, harness_dir: Path | None = None) -> dict[str, Any]:
    """The deployment replay on the engine's CPU serving route: C=1, the Harness's own budget."""
    from serving.endpoint import GenerationSettings
    from serving.profiles import profile_from_mapping
    from serving.replay import ReplayPlan
    from serving.service import replay_run

    mapping = {"engine": "local", "checkpoint": str(checkpoint), "quantization": quantization, "threads": threads}
    if draft_head:
        mapping["draft_head"] = str(draft_head)
    profile = profile_from_mapping(f"engine-{quantization}{'-mtp' if draft_head else ''}", mapping,
                                   source="benchmarks/local_engine.py")
    run_dir = replay_run(profile=profile, harness_dir=harness_dir or demo_harness_dir(), cases_path=cases_path,
                         plan=ReplayPlan(concurrency=(1,), warmup=1, measured=n, request_timeout_s=60.0),
                         settings=GenerationSettings(temperature=1.0, top_p=0.95, max_tokens=256),
                         out_root=ROOT / "runs" / "serving",
                         progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    return {"run": str(run_dir), "summary": summary}


def llama_cpp_figures(gguf: str, prompt: list[int], threads: int) -> dict[str, float] | None:
    try:
        from llama_cpp import Llama
    except ImportError:
        return None
    llm = Llama(model_path=gguf, n_ctx=4096, n_threads=threads, verbose=False)
    started = time.perf_counter()
    llm.eval(prompt)
    prefill = len(prompt) / (time.perf_counter() - started)
    llm.reset()
    llm.eval(prompt[:64])
    started = time.perf_counter()
    for _ in range(DECODE_TOKENS):
        token = llm.sample(temp=0.0)
        llm.eval([token])
    decode_short = DECODE_TOKENS / (time.perf_counter() - started)
    nan = float("nan")
    return {"prefill_tok_s": prefill, "decode_tok_s": nan, "decode_short_tok_s": decode_short,
            "ttft_new_s": nan, "ttft_next_s": nan, "batch8_tok_s": nan}


def _fmt(value: float, spec: str, unit: str = "") -> str:
    return "-" if value != value else f"{value:{spec}}{unit}"  # NaN: not measured on that path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="local", help="'local' (default model), 'tiny' or a folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--agree-prompts", type=int, default=12, help="agent prompts for the greedy agreement")
    parser.add_argument("--agree-tokens", type=int, default=48)
    parser.add_argument("--agent-cases", type=int, default=10, help="measured replay cases (0: skip)")
    parser.add_argument("--agent-quantization", default="int8", help="the engine setting the agent runs on")
    parser.add_argument("--world", default=str(ROOT / "var" / "world"))
    parser.add_argument("--gguf", help="a GGUF file for llama.cpp's figures (if llama_cpp is importable)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    checkpoint = resolve_checkpoint(args.checkpoint)
    cases = Path(args.world) / "replay.jsonl"
    if not cases.is_file():
        from evaluation.world.sets import generate

        generate(out=Path(args.world), seed=7)
    model, tokenizer = load_model(checkpoint)
    prompts = agent_prompts(checkpoint, cases, max(args.agree_prompts, 2))
    print(f"checkpoint {checkpoint} · {args.threads} threads · agent prompts of {min(map(len, prompts))}-"
          f"{max(map(len, prompts))} tokens (demo Harness, replay set)", flush=True)

    rows = {"transformers fp32 generate": measure_plain(model, tokenizer, prompts)}
    print("measured: plain generate", flush=True)
    for quantization in ("none", "int8"):
        name = f"engine {'fp32' if quantization == 'none' else quantization}"
        rows[name] = measure_engine(model, tokenizer, quantization, prompts)
        print(f"measured: {name}", flush=True)
    if args.gguf:
        figures = llama_cpp_figures(args.gguf, prompts[0], args.threads)
        if figures is None:
            print("llama_cpp is not importable: no llama.cpp row", flush=True)
        else:
            rows["llama.cpp (GGUF)"] = figures
    stop = stop_ids_of(model, tokenizer)
    reference = [plain_generate(model, p, args.agree_tokens, stop=True)[0] for p in prompts[: args.agree_prompts]]
    for cut, ids in enumerate(reference):
        for k, token in enumerate(ids):
            if token in stop:
                reference[cut] = ids[: k + 1]
                break
    agree = {q: agreement(model, tokenizer, q, prompts[: args.agree_prompts], reference, args.agree_tokens)
             for q in ("none", "int8")}

    print(f"\n| path | prefill tok/s | decode tok/s after the {len(prompts[0])}-token agent prompt | "
          "decode tok/s after 64 tokens | aggregate decode tok/s, 8 concurrent requests | "
          "TTFT, a new request | TTFT, the request's next round | greedy vs fp32 generate |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in rows.items():
        key = {"engine fp32": "none", "engine int8": "int8"}.get(name)
        if key:
            agree_text = f"{agree[key]['identical']:.0%} identical, {agree[key]['common_prefix']:.0%} common prefix"
            new = f"{r['ttft_new_s']:.2f} s ({r['new_cached']} of {r['new_prompt']} cached)"
            following = f"{r['ttft_next_s']:.2f} s ({r['next_cached']} of {r['next_prompt']} cached)"
        else:
            agree_text = "(reference)" if name.startswith("transformers") else "-"
            new, following = f"{r['ttft_new_s']:.2f} s", f"{r['ttft_next_s']:.2f} s"
        print(f"| {name} | {r['prefill_tok_s']:.0f} | {r['decode_tok_s']:.1f} | {r['decode_short_tok_s']:.1f} | "
              f"{_fmt(r['batch8_tok_s'], '.1f')} | {new} | {following} | {agree_text} |")
    shared = min(common_prefix(torch.tensor(prompts[0]), torch.tensor(p)) for p in prompts[1:])
    print(f"\nthe agent prompts of different requests share their first {shared} tokens: the demo Harness "
          "renders the per-request blocks (products, room) before the static ones (skills, tools)")
    reordered = agent_prompts(checkpoint, cases, 3, bundle=static_blocks_first())
    probe = Engine(EngineModel(model))
    probe.generate(reordered[0], SamplingParams(max_new_tokens=1))
    moved = probe.generate(reordered[1], SamplingParams(max_new_tokens=1))
    probe.close()
    print(f"the same Harness with skills and tools moved before products, room and FAQ: a new request's TTFT "
          f"{moved.ttft_s:.2f} s on engine fp32 ({moved.cached_tokens} of {moved.prompt_tokens} tokens cached)")
    print(f"greedy agreement over {args.agree_prompts} agent prompts, up to {args.agree_tokens} new tokens",
          flush=True)

    if args.agent_cases:
        result = complete_agent(checkpoint, args.agent_quantization, cases, args.agent_cases, args.threads)
        print(f"\ncomplete agent, engine {args.agent_quantization}, C=1, {args.agent_cases} replay cases: "
              f"{json.dumps(result['summary'], indent=1)[:3000]}\nrun folder: {result['run']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
