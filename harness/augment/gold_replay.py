"""Gold replay: a recorded trajectory, remapped, run again under a Harness variant.

The check that a variant preserves the task: the parent's trajectory (for
instance a case's gold trajectory) is remapped with the variant's mapping and
replayed through the runtime with ``ScriptedPolicy``; it must pass every hook
and the stop gate and end the same way (outcome, route, reply), calling the
renamed tools and loading the renamed skills in the same order. Training uses
the replayed trajectory as a teacher trajectory under the variant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.augment.mapping import MappingError
from harness.augment.pipeline import Variant


@dataclass
class ReplayResult:
    trajectory: Any  # harness.runtime.Trajectory under the variant
    expected: dict  # the remapped recording that was replayed
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def replay_under_variant(
    *, trajectory: dict, variant: Variant, request: Any = None, catalogue: Any = None
) -> ReplayResult:
    """Replay ``trajectory`` (recorded under ``variant.parent``) under ``variant.bundle``.

    ``request`` defaults to the request stored in the trajectory; ``catalogue`` to the
    runtime's default. MCP servers are not connected: a recorded trajectory's model
    outputs are replayed, and built-in tools answer from the catalogue.
    """
    from harness.policies import ScriptedPolicy
    from harness.runtime import Agent

    m = variant.mapping
    try:
        expected = m.remap_trajectory(trajectory)
    except MappingError as exc:
        return ReplayResult(None, {}, [f"cannot remap: {exc}"])
    policy = ScriptedPolicy.from_trajectory(expected, name="gold-replay")
    with Agent(
        bundle=variant.bundle, policy=policy, catalogue=catalogue, connect_mcp=False
    ) as agent:
        result = agent.run(request if request is not None else trajectory["request"])
    problems = [
        f"hook {h.hook_id} ({h.event}) {h.decision}: {h.message}"
        for h in result.hook_decisions
        if h.decision != "allow"
    ]
    for key in ("outcome", "route", "reply", "rounds"):
        got, want = getattr(result, key), trajectory.get(key)
        if want is not None and got != want:
            problems.append(f"{key}: {got!r}, the recording has {want!r}")
    got_tools = [c.name for c in result.tool_calls]
    want_tools = [c["name"] for c in expected.get("tool_calls") or []]
    if got_tools != want_tools:
        problems.append(f"tool calls {got_tools}, expected {want_tools}")
    recorded = expected.get("tool_calls") or []
    failed = [
        f"{c.name}: {c.error}"
        for i, c in enumerate(result.tool_calls)
        if c.error and not (i < len(recorded) and recorded[i].get("error"))
    ]
    if failed:
        problems.append("tool calls failed that succeeded in the recording: " + "; ".join(failed))
    got_skills = [s.skill for s in result.skill_loads]
    want_skills = [s.get("skill") for s in expected.get("skill_loads") or []]
    if got_skills != want_skills:
        problems.append(f"skill loads {got_skills}, expected {want_skills}")
    return ReplayResult(result, expected, problems)
