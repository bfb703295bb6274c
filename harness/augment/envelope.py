"""The change envelope: the one declared bound on every HSA perturbation.

``envelope.yaml`` beside this module is the shipped default; an operator edits
it (or passes another file) to decide what training covers. ``load_envelope``
validates the file completely (schema, ranges ordered, constraint and hook
ranges inside the Harness format's hard limits) and raises
:class:`EnvelopeError` listing every problem as ``file:line: field: message``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import Problem
from harness.hook_catalogue import HOOK_TYPES
from harness.prompt import CONSTRAINTS
from harness.schema import load_checked_yaml
from harness.userfiles import InputFileError, read_text
from harness.yamlio import dotted as _dotted

DEFAULT_ENVELOPE = Path(__file__).with_name("envelope.yaml")

_P = {"type": "number", "minimum": 0, "maximum": 1, "x-hint": "a probability in [0, 1]"}
_RANGE = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
_COUNT = {
    "type": "array",
    "items": {"type": "integer", "minimum": 0, "maximum": 20},
    "minItems": 2,
    "maxItems": 2,
}
_FRACTION = {
    "type": "array",
    "items": {"type": "number", "minimum": 0, "maximum": 1},
    "minItems": 2,
    "maxItems": 2,
}


def _section(props: dict, optional: dict | None = None) -> dict:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(props),
        "properties": {**props, **(optional or {})},
    }


#: fields a section may leave out (an envelope written before them stays valid); absent = 0
_OPAQUE = {
    "opaque_name_share": {**_P, "x-hint": "a share in [0, 1] of renames that carry no meaning"}
}


SCHEMA = _section(
    {
        "skills": _section(
            {
                "rename_probability": _P,
                "rewrite_description_probability": _P,
                "add_plausible": _COUNT,
                "add_noise": _COUNT,
                "mask_fraction": _FRACTION,
                "min_reply_skills": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            _OPAQUE,
        ),
        "skill_content": _section(
            {
                "paraphrase_probability": _P,
                "mask_fraction": _FRACTION,
                "protected_rules": {"type": "array", "items": {"type": "string"}},
                "min_rules_per_skill": {"type": "integer", "minimum": 1, "maximum": 50},
                "reorder_probability": _P,
            }
        ),
        "tools": _section(
            {
                "rename_probability": _P,
                "rewrite_description_probability": _P,
                "rewrite_parameter_description_probability": _P,
                "reorder": {"type": "boolean"},
            },
            _OPAQUE,
        ),
        "prompt": _section(
            {
                "reorder_blocks": {"type": "boolean"},
                "pinned_blocks": {"type": "array", "items": {"type": "string"}},
                "reorder_items_probability": _P,
                "paraphrase_items_probability": _P,
                "constraints": {"type": "object", "additionalProperties": _RANGE},
            }
        ),
        "hooks": _section(
            {
                "max_retries": {**_COUNT, "items": {"type": "integer", "minimum": 0, "maximum": 9}},
                "on_exhausted": {
                    "type": "array",
                    "minItems": 1,
                    "items": {"enum": ["fallback", "suppress"]},
                },
                "rewrite_message_probability": _P,
                "message_prefixes": {"type": "array", "minItems": 1, "items": {"type": "string"}},
                "params": {"type": "object", "additionalProperties": _RANGE},
                "extra_banned_phrases": _COUNT,
                "banned_phrase_pool": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1},
                },
            }
        ),
    }
)


class EnvelopeError(ValueError):
    """The envelope file has problems; ``problems`` lists all of them."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__(
            f"{len(self.problems)} problem(s) in the change envelope:\n"
            + "\n".join(f"  {p}" for p in self.problems)
        )


@dataclass(frozen=True)
class Envelope:
    """The validated envelope; sections are plain dicts as written in the file."""

    skills: dict
    skill_content: dict
    tools: dict
    prompt: dict
    hooks: dict
    source: str = ""

    def constraint_range(self, name: str) -> tuple[float, float] | None:
        rng = self.prompt["constraints"].get(name)
        return (rng[0], rng[1]) if rng else None

    def hook_param_range(self, hook_type: str, param: str) -> tuple[float, float] | None:
        """The file's range, else the hook catalogue's own envelope, else None (unchanged)."""
        rng = self.hooks["params"].get(f"{hook_type}.{param}")
        if rng:
            return rng[0], rng[1]
        htype = HOOK_TYPES.get(hook_type)
        if htype and param in htype.envelope:
            lo, hi = htype.envelope[param]
            return lo, hi
        return None

    def to_dict(self) -> dict:
        return {
            "skills": self.skills,
            "skill_content": self.skill_content,
            "tools": self.tools,
            "prompt": self.prompt,
            "hooks": self.hooks,
        }


def parse_envelope(text: str, *, file: str = "envelope.yaml") -> Envelope:
    data, linemap, problems = load_checked_yaml(
        text,
        SCHEMA,
        file=file,
        not_mapping="the envelope must be a mapping with skills, skill_content, tools, prompt and "
        "hooks",
    )
    if problems:
        raise EnvelopeError(problems)

    def ordered(path: tuple, rng: list) -> None:
        if rng[0] > rng[1]:
            problems.append(
                Problem(
                    file,
                    linemap.line(path),
                    _dotted(path),
                    f"[{rng[0]}, {rng[1]}] is not a range: the first value "
                    "must not exceed the second",
                )
            )

    for section, key in (
        ("skills", "add_plausible"),
        ("skills", "add_noise"),
        ("skills", "mask_fraction"),
        ("skill_content", "mask_fraction"),
        ("hooks", "max_retries"),
        ("hooks", "extra_banned_phrases"),
    ):
        ordered((section, key), data[section][key])
    for name, rng in data["prompt"]["constraints"].items():
        path = ("prompt", "constraints", name)
        if name not in CONSTRAINTS:
            problems.append(
                Problem(
                    file,
                    linemap.line(path),
                    _dotted(path),
                    f"unknown constraint '{name}'; known: " + ", ".join(sorted(CONSTRAINTS)),
                )
            )
            continue
        kind, lo, hi, _doc = CONSTRAINTS[name]
        ordered(path, rng)
        if rng[0] < lo or rng[1] > hi:
            problems.append(
                Problem(
                    file,
                    linemap.line(path),
                    _dotted(path),
                    f"[{rng[0]}, {rng[1]}] leaves the valid range [{lo}, {hi}] of prompt.yaml",
                )
            )
        if kind is int and not all(float(v).is_integer() for v in rng):
            problems.append(
                Problem(
                    file,
                    linemap.line(path),
                    _dotted(path),
                    f"{name} is an integer: use whole numbers",
                )
            )
    for key, rng in data["hooks"]["params"].items():
        path = ("hooks", "params", key)
        hook_type, _, param = key.partition(".")
        htype = HOOK_TYPES.get(hook_type)
        spec = (htype.params.get("properties", {}).get(param) if htype else None) or {}
        if spec.get("type") not in ("integer", "number"):
            problems.append(
                Problem(
                    file,
                    linemap.line(path),
                    _dotted(path),
                    f"'{key}' is not a numeric hook parameter; use "
                    "<hook type>.<param>, one of: " + ", ".join(_numeric_params()),
                )
            )
            continue
        ordered(path, rng)
        lo, hi = spec.get("minimum", float("-inf")), spec.get("maximum", float("inf"))
        if rng[0] < lo or rng[1] > hi:
            problems.append(
                Problem(
                    file,
                    linemap.line(path),
                    _dotted(path),
                    f"[{rng[0]}, {rng[1]}] leaves the parameter's valid range [{lo}, {hi}]",
                )
            )
    for i, prefix in enumerate(data["hooks"]["message_prefixes"]):
        if "{" in prefix or "}" in prefix:
            path = ("hooks", "message_prefixes", i)
            problems.append(
                Problem(
                    file,
                    linemap.line(path),
                    _dotted(path),
                    "a prefix is plain text; braces would read as placeholders",
                )
            )
    if problems:
        raise EnvelopeError(problems)
    return Envelope(**data, source=file)


def load_envelope(path: str | Path | None = None) -> Envelope:
    """The envelope at ``path`` (default: the shipped ``envelope.yaml``)."""
    path = Path(path) if path else DEFAULT_ENVELOPE
    try:
        text = read_text(path, what="change envelope")
    except InputFileError as exc:
        raise EnvelopeError([Problem(str(path), 0, "(file)", exc.reason)]) from None
    return parse_envelope(text, file=str(path))


def _numeric_params() -> list[str]:
    out = []
    for name, htype in sorted(HOOK_TYPES.items()):
        for param, spec in sorted(htype.params.get("properties", {}).items()):
            if spec.get("type") in ("integer", "number"):
                out.append(f"{name}.{param}")
    return out
