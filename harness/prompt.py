"""The system-prompt pipeline, ``prompt.yaml``: ordered blocks and numeric constraints.

Blocks are assembled in order for every request. A block's template is text
with named slots, ``{room_status}``; ``{{`` and ``}}`` are literal braces. A
slot is one of the request-context slots below, a ``variables`` entry (static
text such as the avatar's name) or a ``constraints`` entry, so numbers like the
reply length live in the Harness, not in code. Each constraint has a hard valid
range here (a value outside it is a mistake); augmentation uses the narrower
"change envelope" it declares itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness.errors import Problem
from harness.schema import load_checked_yaml
from harness.yamlio import LineMap

FILE = "prompt.yaml"

# Filled by the runtime from the request and the Harness for every request.
CONTEXT_SLOTS: dict[str, str] = {
    "product_specs": "The products on the shelf: link id, name, price, key specs.",
    "current_product": "The product the host is presenting now (current link id).",
    "faq_entries": "FAQ entries retrieved for the comment(s).",
    "room_status": "Current link id, shelf order and recent viewer actions.",
    "viewer_actions": "Recent viewer actions (joined, added to cart ...).",
    "history": "Recent dialogue between viewers and the avatar.",
    "anchor_utterances": "What the human host said recently.",
    "skill_list": "Name, kind and description of every skill (bodies load on demand).",
    "tool_list": "The tools with their parameters, for models without native tool calling.",
    "loaded_skills": "Names of the skills already loaded for this request.",
}

# name: (kind, minimum, maximum, doc)
CONSTRAINTS: dict[str, tuple[type, float, float, str]] = {
    "max_reply_chars": (int, 20, 2000, "Longest public reply, in characters."),
    "max_rounds": (int, 1, 10, "Model rounds per request before the fallback."),
    "tool_timeout_s": (float, 0.1, 60, "Default timeout of one tool call, seconds."),
    "trajectory_budget_s": (float, 1, 600, "Time budget of a whole request, seconds."),
}

SCHEMA = {
    "type": "object",
    "required": ["blocks", "constraints"],
    "additionalProperties": False,
    "properties": {
        "variables": {
            "type": "object",
            "propertyNames": {"pattern": r"^[a-z][a-z0-9_]{0,63}$"},
            "additionalProperties": {"type": ["string", "number"]},
        },
        "constraints": {
            "type": "object",
            "required": list(CONSTRAINTS),
            "propertyNames": {"pattern": r"^[a-z][a-z0-9_]{0,63}$"},
            "additionalProperties": {"type": "number"},
            "properties": {
                name: {"type": "integer" if kind is int else "number", "minimum": lo, "maximum": hi}
                for name, (kind, lo, hi, _doc) in CONSTRAINTS.items()
            },
        },
        "blocks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "template"],
                "properties": {
                    "id": {
                        "type": "string",
                        "pattern": r"^[a-z][a-z0-9_-]{0,63}$",
                        "x-hint": "lower-case letters, digits, '_' or '-'",
                    },
                    "title": {"type": "string"},
                    "template": {"type": "string"},
                    "when": {
                        "type": "string",
                        "x-doc": "a context slot; the block is left out when that slot is empty",
                    },
                },
            },
        },
    },
}

_SLOT = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


@dataclass(frozen=True)
class PromptBlock:
    id: str
    title: str
    template: str
    when: str | None = None

    def slots(self) -> list[str]:
        return [m.group(1) for m in _SLOT.finditer(self.template) if m.group(1)]


@dataclass
class PromptPipeline:
    blocks: list[PromptBlock]
    constraints: dict[str, float]
    variables: dict[str, str]
    line_of: LineMap = field(default_factory=LineMap, repr=False)

    @property
    def max_rounds(self) -> int:
        return int(self.constraints["max_rounds"])

    @property
    def max_reply_chars(self) -> int:
        return int(self.constraints["max_reply_chars"])

    @property
    def tool_timeout_s(self) -> float:
        return float(self.constraints["tool_timeout_s"])

    @property
    def trajectory_budget_s(self) -> float:
        return float(self.constraints["trajectory_budget_s"])

    def render(self, context: dict[str, str]) -> list[tuple[PromptBlock, str]]:
        """Fill every block; returns (block, text) for the blocks that are shown."""
        values = {
            **{k: str(v) for k, v in self.variables.items()},
            **{k: _fmt_number(v) for k, v in self.constraints.items()},
            **{k: str(v) for k, v in context.items()},
        }
        out = []
        for block in self.blocks:
            if block.when and not str(context.get(block.when, "")).strip():
                continue
            out.append((block, render_template(block.template, values)))
        return out


def _fmt_number(v) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def render_template(template: str, values: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        if m.group(1) is None:
            return token
        return values.get(m.group(1), "")

    return _SLOT.sub(sub, template)


def parse_prompt(text: str) -> tuple[PromptPipeline | None, list[Problem]]:
    data, linemap, problems = load_checked_yaml(
        text,
        SCHEMA,
        file=FILE,
        not_mapping="prompt.yaml must be a mapping with 'blocks' and 'constraints'",
    )
    if problems:
        return None, problems
    variables = {k: str(v) for k, v in (data.get("variables") or {}).items()}
    constraints = dict(data["constraints"])
    known = set(CONTEXT_SLOTS) | set(variables) | set(constraints)
    blocks, seen = [], {}
    for i, item in enumerate(data["blocks"]):
        block = PromptBlock(
            item["id"], item.get("title", item["id"]), item["template"], item.get("when")
        )
        at = linemap.line(("blocks", i, "id"))
        if block.id in seen:
            problems.append(
                Problem(
                    FILE,
                    at,
                    f"blocks[{i}].id",
                    f"duplicate block id '{block.id}' (first at line {seen[block.id]})",
                )
            )
        seen.setdefault(block.id, at)
        tline = linemap.value_line(("blocks", i, "template"))
        for m in _SLOT.finditer(block.template):
            slot = m.group(1)
            if m.group(0) in ("{", "}"):
                problems.append(
                    Problem(
                        FILE,
                        tline + block.template.count("\n", 0, m.start()),
                        f"blocks[{i}].template",
                        "unmatched brace: write {{ or }} for a literal brace",
                    )
                )
            elif slot is not None and slot not in known:
                problems.append(
                    Problem(
                        FILE,
                        tline + block.template.count("\n", 0, m.start()),
                        f"blocks[{i}].template",
                        f"unknown slot {{{slot}}}; valid slots: " + ", ".join(sorted(known)),
                    )
                )
        if block.when is not None and block.when not in CONTEXT_SLOTS:
            problems.append(
                Problem(
                    FILE,
                    linemap.line(("blocks", i, "when")),
                    f"blocks[{i}].when",
                    f"unknown context slot '{block.when}'; valid: "
                    + ", ".join(sorted(CONTEXT_SLOTS)),
                )
            )
        blocks.append(block)
    if problems:
        return None, problems
    return PromptPipeline(blocks, constraints, variables, linemap), []
