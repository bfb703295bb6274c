"""Replay a recorded (e.g. gold) trajectory: same request, same model outputs, fresh run.

HSA and training use this to re-run a gold trajectory under a (possibly
augmented) Harness with ``ScriptedPolicy`` and see whether the same model
outputs still pass the hooks, and to check that a stored trajectory is
reproducible under its own Harness.
"""

from __future__ import annotations

from typing import Any

from harness.bundle import Bundle
from harness.livestream import Catalogue
from harness.policies.scripted import ScriptedPolicy
from harness.runtime.agent import Agent
from harness.runtime.failures import FailureInjection
from harness.runtime.trajectory import Trajectory


def replay_trajectory(
    *,
    bundle: Bundle,
    trajectory: dict[str, Any] | Trajectory,
    catalogue: Catalogue | None = None,
    connect_mcp: bool = True,
    failure_injection: FailureInjection | None = None,
) -> Trajectory:
    """Run the trajectory's request again, feeding back its recorded model outputs."""
    data = trajectory.to_dict() if isinstance(trajectory, Trajectory) else trajectory
    policy = ScriptedPolicy.from_trajectory(data, name=f"replay:{data.get('request_id', '')}")
    with Agent(
        bundle=bundle,
        policy=policy,
        catalogue=catalogue,
        connect_mcp=connect_mcp,
        failure_injection=failure_injection,
    ) as agent:
        return agent.run(data["request"])


def same_behaviour(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What differs between two trajectories' behaviour (reply, route, tool calls, skills,
    hooks)."""
    diffs = []
    for key in ("reply", "route", "outcome", "rounds"):
        if a.get(key) != b.get(key):
            diffs.append(f"{key}: {a.get(key)!r} != {b.get(key)!r}")
    calls = [
        [(t["name"], t["arguments"], t.get("error_kind")) for t in x["tool_calls"]] for x in (a, b)
    ]
    if calls[0] != calls[1]:
        diffs.append(f"tool_calls: {calls[0]} != {calls[1]}")
    skills = [[s["skill"] for s in x["skill_loads"] if s["ok"]] for x in (a, b)]
    if skills[0] != skills[1]:
        diffs.append(f"skill_loads: {skills[0]} != {skills[1]}")
    hooks = [
        [(h["hook_id"], h["decision"]) for h in x["hook_decisions"] if h["decision"] != "allow"]
        for x in (a, b)
    ]
    if hooks[0] != hooks[1]:
        diffs.append(f"hook_decisions: {hooks[0]} != {hooks[1]}")
    return diffs
