"""The offline teacher: a case's gold trajectory, recorded by the runtime and replayed under
variants.

A case's gold labels (strategy and reply skills, tool calls, reference reply)
become a script of model outputs in the text protocol: first the skill loads
and tool calls, then the reference reply. ``record_gold`` runs that script
through the runtime under the *original* Harness with ``ScriptedPolicy``, so
the recording has real tool results and the runtime's own prompts. Under a
variant, ``mapping.remap_trajectory`` renames its tool calls and skill loads
and the runtime replays it under the variant bundle: every prompt the variant
would show, the variant's names in every call.

``with_retry=True`` writes a recovery script instead: the reply is attempted
before the reply skill is loaded, the stop gate blocks it, and the next rounds
load the skill and reply; these trajectories teach recovery from hook feedback
(and are what hook-retry stripping removes from most examples).
"""

from __future__ import annotations

import json
from typing import Any

from harness.bundle import Bundle
from harness.policies import ScriptedPolicy
from harness.policies.base import ToolCall
from harness.policies.text_protocol import format_tool_call

TEACHER_GOLD = "gold-replay"


def _comment_text(case: dict[str, Any]) -> str:
    return (
        " ".join(c.get("text", "") for c in case.get("comments", [])).strip()
        or "the viewer's question"
    )


def filled_arguments(
    bundle: Bundle, name: str, arguments: dict[str, Any], case: dict[str, Any]
) -> dict[str, Any]:
    """Gold arguments are constraints; fill the tool's other required parameters plausibly."""
    spec = next((t for t in bundle.tools if t.name == name), None)
    args = dict(arguments or {})
    if spec is None:
        return args
    schema = spec.parameters or {}
    for param in schema.get("required", []):
        if param in args:
            continue
        kind = (schema.get("properties", {}).get(param) or {}).get("type")
        if kind == "integer" or kind == "number":
            args[param] = 1
        elif kind == "array":
            link = case.get("room", {}).get("current_link_id", 1)
            args[param] = [{"link_id": link, "quantity": 1}]
        else:
            args[param] = _comment_text(case) if param in ("query", "question") else "gold"
    return args


def gold_script(case: dict[str, Any], bundle: Bundle, *, with_retry: bool = False) -> list[str]:
    """The model outputs (text protocol) of the case's gold trajectory under ``bundle`` (parent
    names)."""
    gold = case.get("gold") or {}
    load = next((t.name for t in bundle.tools if t.role == "load_skill"), "load_skill")
    silent = next((t.name for t in bundle.tools if t.role == "silent"), "stay_silent")

    def call(name: str, args: dict[str, Any]) -> str:
        return format_tool_call(ToolCall(name=name, arguments=args))

    if gold.get("route") == "silent":
        return [call(silent, {"reason": "irrelevant or unsafe comment"})]
    first = [call(load, {"name": s}) for s in gold.get("strategy_skills", [])]
    for tool in gold.get("tool_calls", []):
        if tool["name"] == silent:
            continue
        first.append(
            call(
                tool["name"],
                filled_arguments(bundle, tool["name"], tool.get("arguments", {}), case),
            )
        )
    reply_load = [call(load, {"name": gold["reply_skills"][0]})] if gold.get("reply_skills") else []
    reply = gold.get("reference_reply") or ""
    if not with_retry or not reply_load:
        return ["\n".join(first + reply_load), reply]
    outputs = ["\n".join(first)] if first else []
    return [*outputs, reply, "\n".join(reply_load), reply]


def record_gold(agent, case: dict[str, Any], *, with_retry: bool = False) -> dict[str, Any]:
    """Run the gold script through ``agent`` (original Harness); the trajectory as JSON."""
    from evaluation.cases import case_request

    agent.policy = ScriptedPolicy(
        gold_script(case, agent.bundle, with_retry=with_retry), name=TEACHER_GOLD
    )
    trajectory = agent.run(case_request(case)).to_dict()
    trajectory["teacher"] = TEACHER_GOLD
    return trajectory


def replay_under(agent, case: dict[str, Any], trajectory: dict[str, Any]) -> dict[str, Any]:
    """Replay a (remapped) recorded trajectory's model outputs under ``agent``'s Harness."""
    from evaluation.cases import case_request

    agent.policy = ScriptedPolicy.from_trajectory(trajectory, name=TEACHER_GOLD)
    replayed = agent.run(case_request(case)).to_dict()
    replayed["teacher"] = TEACHER_GOLD
    return replayed


def dumps(trajectory: dict[str, Any]) -> str:
    return json.dumps(trajectory, ensure_ascii=False, sort_keys=True, default=str)
