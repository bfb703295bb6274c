"""Runtime overhead: the agent loop's own time per request and per round, without the model.

Runs >= 1,000 requests (the example requests of every intent, cycled with fresh
ids) through ``Agent`` with ``ScriptedPolicy`` replaying their gold scripts, and
the same requests through a bare loop that only calls the policy, parses the
tool calls and calls the same tool implementations (built-ins in process, MCP
tools on the same running marketing server). Prints median and p95 of:

- agent, everything except the model (prompt assembly, hooks, tools, records);
- agent, runtime only (also without tool time): the overhead the issue bounds;
- bare loop, everything except the model;

per request and per model round, and the agent/bare ratio.

    .venv/bin/python benchmarks/runtime_overhead.py [--requests 1000] [--no-mcp]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import demo_harness_dir, load_dir  # noqa: E402
from harness.livestream import Request, demo_catalogue  # noqa: E402
from harness.policies import ScriptedPolicy, parse_reply  # noqa: E402
from harness.runtime import Agent  # noqa: E402
from harness.runtime.builtin_tools import BUILTIN_IMPLS, ToolContext  # noqa: E402

EXAMPLES = ROOT / "examples" / "requests"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def load_cases(n: int, *, with_mcp: bool) -> tuple[list[dict], dict[str, list]]:
    names = sorted(p.stem for p in EXAMPLES.glob("*.json"))
    if not with_mcp:
        names = [n for n in names if n != "promotion"]
    requests, scripts = [], {}
    for i in range(n):
        name = names[i % len(names)]
        data = json.loads((EXAMPLES / f"{name}.json").read_text())
        data["id"] = f"{data['id']}-{i}"
        requests.append(data)
        scripts[data["id"]] = json.loads((EXAMPLES / "scripts" / f"{name}.json").read_text())
    return requests, scripts


def bare_loop(agent: Agent, policy: ScriptedPolicy, raw: dict) -> tuple[float, int]:
    """Policy + tool calls only; returns (seconds outside the model, rounds)."""
    started = time.perf_counter()
    model_s = 0.0
    request = Request.from_dict(raw)
    ctx = ToolContext(
        catalogue=agent.catalogue, room=request.room, request=request, skills=agent.bundle.skills
    )
    policy.begin_request(request.id)
    messages = [{"role": "user", "content": request.text}]
    rounds = 0
    while True:
        t0 = time.perf_counter()
        try:
            out = policy.generate(messages)
        except Exception:  # noqa: BLE001 - the script is done
            break
        model_s += time.perf_counter() - t0
        rounds += 1
        calls = parse_reply(out.text).tool_calls
        if not calls:
            break
        for call in calls:
            spec = agent.tools[call.name]
            if spec.builtin:
                result = BUILTIN_IMPLS[spec.builtin](ctx, dict(call.arguments))
            else:
                result = agent.hub.call(
                    spec.mcp_server, spec.mcp_tool, dict(call.arguments), timeout_s=5
                )
            messages.append({"role": "user", "content": json.dumps(result)})
    return time.perf_counter() - started - model_s, rounds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--no-mcp", action="store_true", help="leave out the MCP example")
    args = parser.parse_args()
    bundle = load_dir(demo_harness_dir())
    requests, scripts = load_cases(args.requests + args.warmup, with_mcp=not args.no_mcp)
    policy = ScriptedPolicy(scripts)
    with Agent(
        bundle=bundle, policy=policy, catalogue=demo_catalogue(), connect_mcp=not args.no_mcp
    ) as agent:
        bare_policy = ScriptedPolicy(scripts)
        agent_non_model, agent_runtime, agent_rounds = [], [], []
        bare_non_model, bare_rounds = [], []
        outcomes: dict[str, int] = {}
        started = time.perf_counter()
        for i, raw in enumerate(requests):
            traj = agent.run(raw)
            seconds, rounds = bare_loop(agent, bare_policy, raw)
            if i < args.warmup:
                continue
            outcomes[traj.outcome] = outcomes.get(traj.outcome, 0) + 1
            t = traj.timings
            agent_non_model.append(t["total_s"] - t["model_s"])
            agent_runtime.append(t["runtime_s"])
            agent_rounds.append(traj.rounds)
            bare_non_model.append(seconds)
            bare_rounds.append(rounds)
        wall = time.perf_counter() - started

    def row(label: str, per_request: list[float], rounds: list[int]) -> tuple[float, float]:
        per_round = [s / max(r, 1) for s, r in zip(per_request, rounds, strict=True)]
        med, p95 = statistics.median(per_request), percentile(per_request, 0.95)
        rmed, rp95 = statistics.median(per_round), percentile(per_round, 0.95)
        print(
            f"{label:<44} {med * 1e3:8.3f} {p95 * 1e3:8.3f}   {rmed * 1e3:8.3f} {rp95 * 1e3:8.3f}"
        )
        return med, rmed

    n = len(agent_runtime)
    print(
        f"runtime overhead: {n} measured requests (+{args.warmup} warm-up), "
        f"{sum(agent_rounds)} rounds, outcomes {outcomes}, wall {wall:.1f} s"
    )
    print(f"{'':<44} {'per request (ms)':>17}   {'per round (ms)':>17}")
    print(f"{'':<44} {'median':>8} {'p95':>8}   {'median':>8} {'p95':>8}")
    a_med, a_rmed = row("agent: everything but the model", agent_non_model, agent_rounds)
    r_med, r_rmed = row("agent: runtime only (no model, no tools)", agent_runtime, agent_rounds)
    b_med, b_rmed = row("bare loop: everything but the model", bare_non_model, bare_rounds)
    print(
        f"ratio agent/bare (median, everything but the model): per request "
        f"{a_med / b_med:.1f}x, per round {a_rmed / b_rmed:.1f}x"
    )
    verdict = "OK" if r_rmed < 0.002 else "OVER"
    print(f"median runtime overhead per round: {r_rmed * 1e3:.3f} ms (target < 2 ms: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
