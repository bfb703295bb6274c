"""A readable, step-by-step rendering of a trajectory for the terminal."""

from __future__ import annotations

import json
from typing import Any

from harness.runtime.trajectory import Trajectory


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_trajectory(traj: Trajectory, *, width: int = 160) -> str:
    lines = [
        f"request {traj.request_id} | harness {traj.harness_name}@{traj.harness_digest[:12]} "
        f"| policy {traj.policy}"
    ]
    for comment in traj.request.get("comments", []):
        lines.append(f"comment  {comment.get('user', 'viewer')}: {comment['text']}")
    current_round = -1
    allows: list[str] = []
    allow_key: tuple[int, str, str] | None = None

    def flush() -> None:
        nonlocal allows, allow_key
        if allows and allow_key:
            target = f" [{allow_key[2]}]" if allow_key[2] else ""
            lines.append(f"  hooks   {allow_key[1]}{target}: allow " + ", ".join(allows))
        allows, allow_key = [], None

    for kind, rec in traj.steps():
        if rec.round != current_round:
            flush()
            current_round = rec.round
            lines.append("input" if rec.round == 0 else f"round {rec.round}")
        if kind == "hook" and rec.decision == "allow":
            key = (rec.round, rec.event, rec.target)
            if key != allow_key:
                flush()
                allow_key = key
            allows.append(rec.hook_id)
            continue
        flush()
        if kind == "model":
            if rec.error:
                lines.append(f"  model   FAILED after {rec.latency_s:.2f}s: {rec.error}")
                continue
            ttft = f", ttft {rec.ttft_s:.2f}s" if rec.ttft_s is not None else ""
            lines.append(
                f"  model   {rec.latency_s:.2f}s{ttft}, {rec.input_tokens} tokens in, "
                f"{rec.output_tokens} out: {_short(rec.text, width)}"
            )
            for call in rec.native_tool_calls:
                lines.append(f"          native call {call['name']} {_short(call['arguments'])}")
        elif kind == "tool":
            head = (
                f"  tool    {rec.name}({_short(rec.arguments, 80)}) "
                f"[{rec.binding}] {rec.latency_s * 1000:.0f} ms"
            )
            if rec.error:
                injected = f" (injected {rec.injected})" if rec.injected else ""
                lines.append(f"{head} -> ERROR {rec.error_kind}{injected}: {_short(rec.error)}")
            else:
                lines.append(f"{head} -> {_short(rec.result, width - 20)}")
        elif kind == "skill":
            status = f"loaded ({rec.kind})" if rec.ok else f"FAILED: {rec.error}"
            lines.append(f"  skill   {rec.skill} {status}")
        elif kind == "hook":
            target = f" [{rec.target}]" if rec.target else ""
            lines.append(
                f"  hook    {rec.event}{target} {rec.hook_id} ({rec.type}): "
                f"{rec.decision.upper()}: {_short(rec.message)}"
            )
    flush()
    lines.append(
        f"outcome  {traj.outcome} ({traj.outcome_reason}); route {traj.route}; "
        f"{traj.rounds} round(s), {traj.retries} retr{'y' if traj.retries == 1 else 'ies'}"
    )
    t = traj.timings
    budget = traj.settings.get("trajectory_budget_s")
    lines.append(
        f"timings  total {t.get('total_s', 0):.2f}s"
        + (f" of the {budget:g} s budget" if isinstance(budget, int | float) else "")
        + f" = model {t.get('model_s', 0):.2f}s + "
        f"tools {t.get('tool_s', 0):.3f}s + runtime {t.get('runtime_s', 0) * 1000:.1f} ms"
    )
    if isinstance(t.get("setup_s"), int | float):
        setup = t.get("setup") or {}
        said = {"slot": "held", "file": "restored from disk", "prefilled": "prefilled and saved"}
        what = [f"model loaded in {setup['load_s']:.2f}s"] if "load_s" in setup else []
        if setup.get("prefix") in said:
            what.append(
                f"Harness prefix ({setup['prefix_tokens']} tokens) {said[setup['prefix']]} "
                f"in {setup['prefix_s']:.2f}s"
            )
        lines.append(
            f"setup    {t['setup_s']:.2f}s before the budget"
            + (": " + "; ".join(what) if what else "")
        )
    lines.append(f"reply    {traj.reply if traj.route != 'silent' else '(silent)'}")
    return "\n".join(lines)
