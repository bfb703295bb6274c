"""The trajectory record: everything one request did, as JSON.

Every model call (messages in, text out, tokens, timings), skill load, tool call
(arguments, result or error, latency), hook decision and the final reply, each
with a ``seq`` number so the steps can be read back in the order they happened.
Evaluation, training and the studio read this record; its keys are a contract
(docs/runtime.md), so fields are only ever added.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, field
from typing import Any

ROUTES = ("public", "private", "silent")
OUTCOMES = ("replied", "silent", "fallback", "suppressed")


@dataclass
class ModelCallRecord:
    seq: int
    round: int
    messages: list[dict[str, Any]]
    text: str
    native_tool_calls: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    ttft_s: float | None = None
    decode_tokens_per_s: float | None = None
    finish_reason: str = ""
    error: str | None = None
    usage_reported: bool = True  # False: output_tokens counts streamed chunks
    # prompt tokens the server took from its cache (None: not reported)
    cached_tokens: int | None = None


@dataclass
class SkillLoadRecord:
    seq: int
    round: int
    skill: str
    kind: str | None
    ok: bool
    error: str | None = None


@dataclass
class ToolCallRecord:
    seq: int
    round: int
    name: str
    arguments: dict[str, Any]
    binding: str = ""
    result: Any = None
    error: str | None = None
    error_kind: str | None = (
        # timeout | malformed | permission_denied | tool_error | unavailable | blocked |
        # unknown_tool
        None
    )
    injected: str | None = None  # the failure injected into this call, if any
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class HookDecisionRecord:
    seq: int
    round: int
    event: str
    hook_id: str
    type: str
    decision: str  # allow | block | fallback | suppress
    message: str = ""
    target: str = ""  # the tool name for tool events


@dataclass
class Trajectory:
    request_id: str
    harness_name: str
    harness_digest: str
    policy: str
    request: dict[str, Any]
    settings: dict[str, Any]
    reply: str = ""
    route: str = "public"
    outcome: str = "replied"
    outcome_reason: str = ""
    rounds: int = 0
    retries: int = 0
    model_calls: list[ModelCallRecord] = field(default_factory=list)
    skill_loads: list[SkillLoadRecord] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    hook_decisions: list[HookDecisionRecord] = field(default_factory=list)
    final_room: dict[str, Any] = field(default_factory=dict)
    reasoning: str = ""
    timings: dict[str, Any] = field(default_factory=dict)
    _seq: int = field(default=0, repr=False)

    def next_seq(self) -> int:
        self._seq += 1
        return self._seq

    @property
    def loaded_skills(self) -> list[str]:
        return [s.skill for s in self.skill_loads if s.ok]

    def to_dict(self) -> dict[str, Any]:
        data = {
            "request_id": self.request_id,
            "harness": {"name": self.harness_name, "digest": self.harness_digest},
            "policy": self.policy,
            "reply": self.reply,
            "route": self.route,
            "outcome": self.outcome,
            "outcome_reason": self.outcome_reason,
            "rounds": self.rounds,
            "retries": self.retries,
            "model_calls": [asdict(m) for m in self.model_calls],
            "skill_loads": [asdict(s) for s in self.skill_loads],
            "tool_calls": [asdict(t) for t in self.tool_calls],
            "hook_decisions": [asdict(h) for h in self.hook_decisions],
            "final_room": self.final_room,
            "reasoning": self.reasoning,
            "timings": self.timings,
            "settings": self.settings,
            "request": self.request,
        }
        for call in data["tool_calls"]:
            if call["error"] is None:
                call.pop("error_kind")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        traj = cls(
            request_id=data["request_id"],
            harness_name=data["harness"]["name"],
            harness_digest=data["harness"]["digest"],
            policy=data.get("policy", ""),
            request=data.get("request", {}),
            settings=data.get("settings", {}),
            reply=data.get("reply", ""),
            route=data.get("route", "public"),
            outcome=data.get("outcome", "replied"),
            outcome_reason=data.get("outcome_reason", ""),
            rounds=data.get("rounds", 0),
            retries=data.get("retries", 0),
            final_room=data.get("final_room", {}),
            reasoning=data.get("reasoning", ""),
            timings=data.get("timings", {}),
        )
        traj.model_calls = [ModelCallRecord(**m) for m in data.get("model_calls", [])]
        traj.skill_loads = [SkillLoadRecord(**s) for s in data.get("skill_loads", [])]
        traj.tool_calls = [
            ToolCallRecord(**{"error_kind": None, **t}) for t in data.get("tool_calls", [])
        ]
        traj.hook_decisions = [HookDecisionRecord(**h) for h in data.get("hook_decisions", [])]
        return traj

    def steps(self) -> list[tuple[str, Any]]:
        """All records in the order they happened: (kind, record)."""
        items: list[tuple[int, str, Any]] = []
        items += [(m.seq, "model", m) for m in self.model_calls]
        items += [(s.seq, "skill", s) for s in self.skill_loads]
        items += [(t.seq, "tool", t) for t in self.tool_calls]
        items += [(h.seq, "hook", h) for h in self.hook_decisions]
        items.sort(key=lambda t: t[0])
        return [(kind, rec) for _, kind, rec in items]


_RECORD_LISTS = {
    "model_calls": ModelCallRecord,
    "skill_loads": SkillLoadRecord,
    "tool_calls": ToolCallRecord,
    "hook_decisions": HookDecisionRecord,
}


def _is_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


# What each field of the step records holds (their annotations), as a check and its words: a field
# the studio's pages read must hold what they expect (``seq: "3"`` once made a stored page a 500).
_FIELD_TYPES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "int": (lambda v: type(v) is int, "a whole number"),
    "float": (_is_number, "a number"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "dict[str, Any]": (lambda v: isinstance(v, dict), "an object"),
    "list[dict[str, Any]]": (
        lambda v: isinstance(v, list) and all(isinstance(x, dict) for x in v),
        "a list of objects",
    ),
    "Any": (lambda v: True, "anything"),
}


def _field_problem(annotation: str, value: Any) -> str | None:
    """What the value should be, or None when it is that (``X | None`` also takes null)."""
    optional = annotation.endswith(" | None")
    if optional and value is None:
        return None
    check, words = _FIELD_TYPES.get(annotation.removesuffix(" | None"), _FIELD_TYPES["Any"])
    if check(value):
        return None
    return f"must be {words}{' or null' if optional else ''}, got {_shown(value)}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def non_finite_paths(value: Any, path: str, *, limit: int = 10) -> list[str]:
    """Where ``value`` holds NaN or an infinity (JSON has neither; Python's reader lets them in)."""
    found: list[str] = []
    stack = [(path, value)]
    while stack and len(found) < limit:
        where, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            found.append(where)
        elif isinstance(item, dict):
            stack.extend((f"{where}.{key}", v) for key, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
    return sorted(found)


def record_problems(data: Any, *, where: str = "trajectory") -> list[str]:
    """What is wrong with a trajectory record another process sent (``to_dict``'s shape), each
    problem as ``field: message``; empty when ``Trajectory.from_dict`` reads it whole. The studio's
    traffic API answers these, so a deployment learns which field to fix."""
    from dataclasses import fields

    from harness.livestream import DocumentValidationError, Request

    if not isinstance(data, dict):
        return [f"{where}: expected a JSON object (a trajectory record), got {type(data).__name__}"]
    problems: list[str] = []
    request_id = data.get("request_id")
    if not isinstance(request_id, str) or not request_id.strip() or len(request_id) > 200:
        problems.append(
            f"{where}.request_id: required, a non-empty string of at most 200 characters"
        )
    elif hidden := [c for c in request_id if unicodedata.category(c) in ("Cc", "Cf")]:
        problems.append(
            f"{where}.request_id: no control or direction characters (a right-to-left override "
            f"reorders what a page shows); found U+{ord(hidden[0]):04X}"
        )
    harness = data.get("harness")
    if (
        not isinstance(harness, dict)
        or not isinstance(harness.get("name"), str)
        or not isinstance(harness.get("digest"), str)
    ):
        problems.append(
            f'{where}.harness: required, {{"name": str, "digest": str}} (the Harness it ran under)'
        )
    for key, allowed in (("route", ROUTES), ("outcome", OUTCOMES)):
        if key in data and data[key] not in allowed:
            problems.append(
                f"{where}.{key}: must be one of {', '.join(allowed)}, got {data[key]!r}"
            )
    for key in ("reply", "policy", "outcome_reason", "reasoning"):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{where}.{key}: must be a string")
    for key in ("timings", "settings", "final_room"):
        if key in data and not isinstance(data[key], dict):
            problems.append(f"{where}.{key}: must be an object")
    for key in ("rounds", "retries"):
        if key in data and (type(data[key]) is not int or data[key] < 0):
            problems.append(f"{where}.{key}: must be a whole number >= 0")
    if "request" not in data:
        problems.append(f"{where}.request: required, the request the agent answered")
    else:
        try:
            Request.from_dict(data["request"], source=f"{where}.request")
        except DocumentValidationError as error:
            problems += [line.strip() for line in str(error).splitlines()[1:] if line.strip()] or [
                str(error)
            ]
    for key, record in _RECORD_LISTS.items():
        items = data.get(key, [])
        if not isinstance(items, list):
            problems.append(f"{where}.{key}: must be a list")
            continue
        known = {f.name for f in fields(record)}
        needed = {f.name for f in fields(record) if f.default is f.default_factory is MISSING}
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                problems.append(f"{where}.{key}[{i}]: must be an object")
            elif needed - item.keys():
                problems.append(
                    f"{where}.{key}[{i}]: missing {', '.join(sorted(needed - item.keys()))}"
                )
            elif item.keys() - known:
                problems.append(
                    f"{where}.{key}[{i}]: unknown field(s) {', '.join(sorted(item.keys() - known))}"
                )
            else:
                types = {f.name: str(f.type) for f in fields(record)}
                for name, value in item.items():
                    if problem := _field_problem(types[name], value):
                        problems.append(f"{where}.{key}[{i}].{name}: {problem}")
    timings = data.get("timings")
    if isinstance(timings, dict):
        for name, value in timings.items():
            if name.endswith("_s") and value is not None and not _is_number(value):
                problems.append(
                    f"{where}.timings.{name}: must be a number of seconds, got {_shown(value)}"
                )
    problems += [
        f"{path}: must be a finite number (JSON has no NaN or Infinity)"
        for path in non_finite_paths(data, where)
    ]
    return problems
