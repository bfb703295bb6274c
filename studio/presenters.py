"""Turning a trajectory's JSON into the steps a page shows, in the order they happened (shared by
the playground, the traffic and annotation pages and the evolution's case views)."""

from __future__ import annotations

import json
from typing import Any


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def trajectory_steps(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """Model calls, skill loads, tool calls and hook decisions merged by their `seq` number."""
    steps: list[dict[str, Any]] = []
    for call in trajectory.get("model_calls", []):
        steps.append(
            {**call, "type": "model_call", "title": f"model call (round {call.get('round')})"}
        )
    for load in trajectory.get("skill_loads", []):
        steps.append({**load, "type": "skill_load", "title": f"load skill {load.get('skill')}"})
    for call in trajectory.get("tool_calls", []):
        steps.append(
            {
                **call,
                "type": "tool_call",
                "title": f"tool {call.get('name')}",
                "arguments_text": _pretty(call.get("arguments", {})),
                "result_text": _pretty(call.get("result")),
            }
        )
    for decision in trajectory.get("hook_decisions", []):
        steps.append(
            {
                **decision,
                "type": "hook_decision",
                "title": f"hook {decision.get('hook_id')} at {decision.get('event')}",
            }
        )
    return sorted(steps, key=lambda step: step.get("seq", 0))


def system_prompt(trajectory: dict[str, Any]) -> str:
    """The system prompt the first model call received (the assembled prompt blocks)."""
    for call in trajectory.get("model_calls", []):
        for message in call.get("messages", []):
            if message.get("role") == "system":
                return str(message.get("content", ""))
        break
    return ""


def present_playground_result(result: dict[str, Any]) -> dict[str, Any]:
    trajectory = result.get("trajectory", {})
    return {
        "run": result,
        "traj": trajectory,
        # the steps recorded so far, stored while the agent runs; the finished run replaces them
        "partial": bool(result.get("partial")),
        "steps": trajectory_steps(trajectory),
        "system_prompt": system_prompt(trajectory),
        "prompt_blocks": result.get("prompt_blocks", []),
        "timings": [
            (key.removesuffix("_s").replace("_", " "), value)
            for key, value in trajectory.get("timings", {}).items()
            if isinstance(value, int | float) and key.endswith("_s")
        ],
    }
