"""Lifecycle hooks, ``hooks.yaml``: declarative checks and the retry policy.

A hook names an ``event``, a ``type`` from :mod:`harness.hook_catalogue`, an
optional ``matcher`` (a regular expression over the tool name for tool events),
``params`` checked against the type's schema, and ``on_fail``: what a failure
does. ``retry`` blocks the step and sends the hook's message to the next model
round; ``fallback`` ends the request with the conservative reply; ``suppress``
ends it silently. ``retry`` bounds how many stop-gate retries a request may
use and what happens when they run out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.errors import Problem
from harness.hook_catalogue import ACTIONS, EVENTS, HOOK_TYPES
from harness.regex import user_fullmatch, user_regex_problem
from harness.schema import load_checked_yaml, schema_problems
from harness.text_edit import ID_HINT, ID_PATTERN
from harness.yamlio import LineMap

FILE = "hooks.yaml"

SCHEMA = {
    "type": "object",
    "required": ["hooks"],
    "additionalProperties": False,
    "properties": {
        "retry": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_retries": {"type": "integer", "minimum": 0, "maximum": 9},
                "on_exhausted": {"enum": ["fallback", "suppress"]},
                "fallback_reply": {"type": "string", "minLength": 1, "maxLength": 500},
                "message_prefix": {"type": "string"},
            },
        },
        "hooks": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "event", "type"],
                "properties": {
                    "id": {"type": "string", "pattern": ID_PATTERN, "x-hint": ID_HINT},
                    "event": {"enum": list(EVENTS)},
                    "type": {"type": "string"},
                    "description": {"type": "string"},
                    "matcher": {"type": "string"},
                    "enabled": {"type": "boolean"},
                    "params": {"type": "object"},
                    "on_fail": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "action": {"enum": list(ACTIONS)},
                            "message": {"type": "string", "maxLength": 1000},
                            "fallback_reply": {"type": "string", "maxLength": 500},
                        },
                    },
                },
            },
        },
    },
}

DEFAULT_FALLBACK = "Thanks for your question! Let me check that and get back to you shortly."


@dataclass(frozen=True)
class HookSpec:
    id: str
    event: str
    type: str
    matcher: str | None
    params: dict
    action: str
    message: str
    fallback_reply: str | None
    enabled: bool = True
    description: str = ""

    def matches(self, name: str | None) -> bool:
        return self.matcher is None or name is None or user_fullmatch(self.matcher, name)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 2
    on_exhausted: str = "fallback"
    fallback_reply: str = DEFAULT_FALLBACK
    message_prefix: str = ""


@dataclass
class HookSet:
    hooks: list[HookSpec]
    retry: RetryPolicy
    line_of: LineMap = field(default_factory=LineMap, repr=False)

    def at(self, event: str) -> list[HookSpec]:
        return [h for h in self.hooks if h.enabled and h.event == event]


def parse_hooks(text: str) -> tuple[HookSet | None, list[Problem]]:
    data, linemap, problems = load_checked_yaml(
        text,
        SCHEMA,
        file=FILE,
        not_mapping="hooks.yaml must be a mapping with a 'hooks' list (and optional 'retry')",
    )
    if problems:
        return None, problems
    hooks, seen = [], {}
    for i, item in enumerate(data["hooks"]):
        where = ("hooks", i)
        at = linemap.line((*where, "id"))
        if item["id"] in seen:
            problems.append(
                Problem(
                    FILE,
                    at,
                    f"hooks[{i}].id",
                    f"duplicate hook id '{item['id']}' (first at line {seen[item['id']]})",
                )
            )
        seen.setdefault(item["id"], at)
        htype = HOOK_TYPES.get(item["type"])
        if htype is None:
            problems.append(
                Problem(
                    FILE,
                    linemap.line((*where, "type")),
                    f"hooks[{i}].type",
                    f"unknown hook type '{item['type']}'; known types: "
                    + ", ".join(sorted(HOOK_TYPES)),
                )
            )
            continue
        if item["event"] not in htype.events:
            problems.append(
                Problem(
                    FILE,
                    linemap.line((*where, "event")),
                    f"hooks[{i}].event",
                    f"hook type '{htype.name}' runs at "
                    + " or ".join(htype.events)
                    + f", not at '{item['event']}'",
                )
            )
        params = item.get("params") or {}
        problems += schema_problems(
            params, htype.params, linemap=linemap, file=FILE, prefix=(*where, "params")
        )
        for key in ("patterns",):
            for j, pattern in enumerate(params.get(key) or []):
                problems += _regex_problem(
                    pattern,
                    linemap.line((*where, "params", key, j)),
                    f"hooks[{i}].params.{key}[{j}]",
                    item.get("id", i),
                )
        matcher = item.get("matcher")
        if matcher is not None:
            problems += _regex_problem(
                matcher, linemap.line((*where, "matcher")), f"hooks[{i}].matcher", item.get("id", i)
            )
        on_fail = item.get("on_fail") or {}
        action = on_fail.get("action", htype.default_action)
        if item["event"] == "input" and action == "retry":
            problems.append(
                Problem(
                    FILE,
                    linemap.line((*where, "on_fail", "action")),
                    f"hooks[{i}].on_fail.action",
                    "an input hook runs before any model round, so it cannot "
                    "retry; use fallback or suppress",
                )
            )
        hooks.append(
            HookSpec(
                item["id"],
                item["event"],
                item["type"],
                matcher,
                params,
                action,
                on_fail.get("message", htype.doc),
                on_fail.get("fallback_reply"),
                item.get("enabled", True),
                item.get("description", ""),
            )
        )
    retry = data.get("retry") or {}
    policy = RetryPolicy(
        retry.get("max_retries", 2),
        retry.get("on_exhausted", "fallback"),
        retry.get("fallback_reply", DEFAULT_FALLBACK),
        retry.get("message_prefix", ""),
    )
    if problems:
        return None, problems
    return HookSet(hooks, policy, linemap), []


def _regex_problem(pattern: str, line: int, field_: str, hook_id: str) -> list[Problem]:
    # RE2 (harness/regex.py): a Harness's pattern must match in linear time, on the web server and
    # workers
    if problem := user_regex_problem(pattern):
        return [Problem(FILE, line, field_, f"hook '{hook_id}': {problem}")]
    return []


def referenced_names(hook: HookSpec) -> tuple[list[str], list[str]]:
    """(tool names, skill names) that a hook's params refer to."""
    htype = HOOK_TYPES[hook.type]
    tools, skills = [], []
    for key, bucket in ((k, tools) for k in htype.tool_params):
        bucket += _as_list(hook.params.get(key))
    for key in htype.skill_params:
        skills += _as_list(hook.params.get(key))
    return tools, skills


def _as_list(value) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)
