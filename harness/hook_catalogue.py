"""The catalogue of hook types an operator can configure in ``hooks.yaml``.

Hooks are declarative: a hook in a bundle picks a type from this catalogue,
an event, an optional matcher and parameters; nothing typed into a browser is
ever executed. Each type declares the events it may run at, the JSON Schema of
its parameters, which parameters name tools or skills (so validation can check
them and augmentation can rename them), and the action it takes on failure when
the hook does not say. New types are added here and implemented in
``harness.runtime.hook_impls``; a test keeps the two in step.

Events: ``input`` (the request, before any model call), ``before_model``,
``after_model`` (the raw model output), ``before_tool``, ``after_tool``, and
``stop`` (a proposed final reply).
"""

from __future__ import annotations

from dataclasses import dataclass, field

EVENTS = ("input", "before_model", "after_model", "before_tool", "after_tool", "stop")
ACTIONS = ("retry", "fallback", "suppress")

_NAMES = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


@dataclass(frozen=True)
class HookType:
    name: str
    events: tuple[str, ...]
    params: dict  # JSON Schema of the params mapping
    doc: str
    default_action: str = "retry"
    tool_params: tuple[str, ...] = ()  # params that hold tool names (str or list)
    skill_params: tuple[str, ...] = ()  # params that hold skill names (str or list)
    envelope: dict = field(default_factory=dict)  # numeric params: (min, max) augmentation may use


def _obj(properties: dict, required: tuple[str, ...] = ()) -> dict:
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "required": list(required),
    }


HOOK_TYPES: dict[str, HookType] = {
    h.name: h
    for h in [
        HookType(
            "input_validity",
            ("input",),
            _obj(
                {
                    "min_chars": {"type": "integer", "minimum": 0, "maximum": 100},
                    "max_chars": {"type": "integer", "minimum": 1, "maximum": 5000},
                    "max_comments": {"type": "integer", "minimum": 1, "maximum": 100},
                }
            ),
            "Rejects empty, over-long or over-crowded requests before any model call.",
            default_action="suppress",
            envelope={"max_chars": (200, 2000)},
        ),
        HookType(
            "prompt_injection_guard",
            ("input",),
            _obj(
                {
                    "patterns": {"type": "array", "items": {"type": "string", "format": "regex"}},
                    "use_default_patterns": {"type": "boolean"},
                }
            ),
            "Comments that try to override instructions ('ignore previous instructions', "
            "'you are now ...', 'reveal your prompt') are refused silently.",
            default_action="suppress",
        ),
        HookType(
            "tool_args_schema",
            ("before_tool",),
            _obj({}),
            "Tool arguments must satisfy the tool's JSON-Schema parameters; the model gets "
            "the errors and may try again.",
        ),
        HookType(
            "link_id_on_shelf",
            ("before_tool",),
            _obj({"argument": {"type": "string", "minLength": 1}}),
            "The link id argument of a product tool must be on the room's shelf.",
        ),
        HookType(
            "max_tool_calls",
            ("before_tool",),
            _obj(
                {
                    "max_calls": {"type": "integer", "minimum": 1, "maximum": 50},
                    "block_repeats": {"type": "boolean"},
                }
            ),
            "Bounds tool calls per request and blocks exact repeats of a call already made.",
            envelope={"max_calls": (4, 12)},
        ),
        HookType(
            "tool_error_guidance",
            ("after_tool",),
            _obj({"message": {"type": "string"}}),
            "After a failed tool call, tells the model not to guess what the tool would have "
            "returned.",
        ),
        HookType(
            "context_budget",
            ("before_model",),
            _obj(
                {"max_prompt_chars": {"type": "integer", "minimum": 500, "maximum": 500000}},
                ("max_prompt_chars",),
            ),
            "Stops the request with the fallback when the prompt grows past a size.",
            default_action="fallback",
            envelope={"max_prompt_chars": (8000, 60000)},
        ),
        HookType(
            "tool_call_format",
            ("after_model",),
            _obj({}),
            "Malformed tool-call text (bad JSON, unknown tool) goes back to the model with "
            "what was wrong.",
        ),
        HookType(
            "require_reply_skill",
            ("stop",),
            _obj({"skills": _NAMES}),
            "A reply skill (or one of 'skills') must be loaded before a final reply.",
            skill_params=("skills",),
        ),
        HookType(
            "require_tool_before_claim",
            ("stop",),
            _obj(
                {
                    "claim": {"enum": ["price", "stock", "promotion", "link"]},
                    "tools": {**_NAMES, "minItems": 1},
                },
                ("claim", "tools"),
            ),
            "A reply that states a price, stock level, promotion or link number needs a "
            "successful call to one of 'tools' in this request.",
            tool_params=("tools",),
        ),
        HookType(
            "max_length",
            ("stop",),
            _obj({"max_chars": {"type": "integer", "minimum": 10, "maximum": 5000}}),
            "Reply length limit; defaults to the prompt constraint max_reply_chars.",
            envelope={"max_chars": (80, 400)},
        ),
        HookType(
            "banned_phrases",
            ("stop",),
            _obj(
                {
                    "phrases": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1},
                        "minItems": 1,
                    },
                    "case_sensitive": {"type": "boolean"},
                },
                ("phrases",),
            ),
            "Phrases the avatar must never say (absolute promises, medical claims ...).",
        ),
        HookType(
            "response_format",
            ("stop",),
            _obj(
                {
                    "no_markdown": {"type": "boolean"},
                    "no_urls": {"type": "boolean"},
                    "single_paragraph": {"type": "boolean"},
                    "no_tool_syntax": {"type": "boolean"},
                }
            ),
            "Spoken replies: no Markdown, no URLs, one paragraph, no leaked tool-call syntax.",
        ),
        HookType(
            "numbers_grounded",
            ("stop",),
            _obj({"ignore": {"type": "array", "items": {"type": "number"}}}),
            "Every number in the reply must appear in the request context or a tool result "
            "(factuality risk: invented prices, discounts, stock).",
        ),
        HookType(
            "language",
            ("stop",),
            _obj(
                {
                    "language": {"enum": ["en"]},
                    "min_ascii_ratio": {"type": "number", "minimum": 0.5, "maximum": 1},
                }
            ),
            "The reply must be in the room's language.",
        ),
    ]
}
