"""The text tool-call protocol and reply clean-up.

Models without native tool calling write calls as
``<tool_call>{"name": "...", "arguments": {...}}</tool_call>`` (the Qwen/Hermes
format, so the same traces train Qwen models). ``parse_reply`` pulls the calls
out, strips ``<think>...</think>`` reasoning, and reports malformed calls as
messages (for hook feedback in the next round) instead of raising.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from harness.policies.base import ToolCall

TOOL_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass
class ParsedReply:
    """A model's text split into reply text, tool calls and protocol errors."""

    text: str  # reasoning and tool-call blocks removed, stripped
    tool_calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    reasoning: str = ""


def strip_reasoning(text: str) -> tuple[str, str]:
    """Remove ``<think>`` blocks; returns (text, reasoning).

    An unclosed ``<think>`` hides everything after it; a lone ``</think>``
    (templates that open the block in the prompt) hides everything before it.
    """
    reasoning = [m.group(0)[7:-8] for m in THINK_RE.finditer(text)]
    text = THINK_RE.sub("", text)
    if "</think>" in text:
        before, _, text = text.rpartition("</think>")
        reasoning.append(before)
    if "<think>" in text:
        text, _, after = text.partition("<think>")
        reasoning.append(after)
    return text, "\n".join(r.strip() for r in reasoning if r.strip())


def _call_from_json(raw: str) -> tuple[ToolCall | None, str | None]:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return (
            None,
            f"tool call is not valid JSON ({exc.msg} at char {exc.pos}): {raw.strip()[:120]}",
        )
    if not isinstance(data, dict):
        return None, "tool call must be a JSON object with 'name' and 'arguments'"
    name = data.get("name")
    if not isinstance(name, str) or not name:
        return None, f"tool call has no 'name' (a string): {raw.strip()[:120]}"
    arguments: Any = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None, f"arguments of tool call {name!r} are not a JSON object"
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return None, f"arguments of tool call {name!r} must be a JSON object"
    return ToolCall(name=name, arguments=arguments), None


def _json_list(body: str) -> list[str] | None:
    if not body.startswith("["):
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    return [json.dumps(item) for item in data] if isinstance(data, list) else None


def parse_reply(text: str) -> ParsedReply:
    """Split model text into reply, tool calls and errors (never raises)."""
    visible, reasoning = strip_reasoning(text)
    calls: list[ToolCall] = []
    errors: list[str] = []
    for match in TOOL_CALL_RE.finditer(visible):
        body = match.group(1).strip()
        # SmolLM2 / APIGen style: a JSON list of calls inside one tag
        items = _json_list(body)
        for raw in items if items is not None else [body]:
            call, error = _call_from_json(raw)
            if call is not None:
                calls.append(call)
            else:
                errors.append(error or "malformed tool call")
    rest = TOOL_CALL_RE.sub("", visible)
    if "<tool_call>" in rest:
        head, _, tail = rest.partition("<tool_call>")
        call, error = _call_from_json(tail)
        if call is not None:  # a call whose closing tag was cut off but whose JSON is whole
            calls.append(call)
        else:
            errors.append(
                'unclosed <tool_call>: write <tool_call>{"name": '
                '..., "arguments": {...}}</tool_call>'
            )
        rest = head
    rest = rest.replace("</tool_call>", "")
    return ParsedReply(text=rest.strip(), tool_calls=calls, errors=errors, reasoning=reasoning)


def format_tool_call(call: ToolCall) -> str:
    return (
        "<tool_call>"
        + json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False)
        + "</tool_call>"
    )


def format_tool_response(name: str, payload: Any) -> str:
    body = json.dumps({"name": name, "content": payload}, ensure_ascii=False, default=str)
    return f"<tool_response>{body}</tool_response>"
