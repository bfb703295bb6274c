"""Structured edits on Harness files, applied as small text patches and validated.

A diagnosis proposes *edits*, not free text: add or change a skill rule (by
rule id), add a refusal exclusion, add a hook or tighten one, change a numeric
constraint, require a tool call before a kind of claim. Each edit is a small
dataclass that serialises to JSON (``to_dict`` / ``edit_from_dict``) so the
studio can store it and an LLM can write it, and that patches the file texts
in place through :mod:`harness.text_edit` (other lines stay byte-identical,
so the diff a reviewer sees is the change and nothing else). ``apply_edits``
runs every edit and then loads the result through :func:`harness.load_mapping`,
so an edit that would break the Harness is refused with the validator's problems.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from harness import HarnessValidationError, load_mapping
from harness.bundle import Bundle
from harness.skills import parse_skill
from harness.text_edit import (
    TextEditError,
    insert_hook,
    insert_rule,
    read_hooks,
    replace_hook,
    replace_rule,
)


class EditError(ValueError):
    """An edit cannot be applied; the message names the edit, the field and what is valid."""


def _skill_path(skill: str) -> str:
    return f"skills/{skill}/SKILL.md"


def _need(files: dict[str, str], path: str, what: str) -> str:
    if path not in files:
        raise EditError(f"{what}: {path} is not in the Harness")
    return files[path]


def _text_edit(what: str, edit, *args, **kwargs) -> str:
    """Run one :mod:`harness.text_edit` edit; its refusal becomes this edit's EditError."""
    try:
        return edit(*args, **kwargs)
    except TextEditError as exc:
        raise EditError(f"{what}: {exc}") from None


def _valid_skill(files: dict[str, str], skill: str, what: str) -> str:
    """The path of ``skill``'s SKILL.md, which must parse before it is edited."""
    path = _skill_path(skill)
    parsed, problems = parse_skill(_need(files, path, what), path=path)
    if parsed is None:
        raise EditError(f"{what}: {path} does not parse: {'; '.join(map(str, problems))}")
    return path


@dataclass(frozen=True)
class Edit:
    """Base of all edits; ``op`` names the kind in JSON."""

    op: ClassVar[str] = ""

    def apply(self, files: dict[str, str]) -> dict[str, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, **asdict(self)}


@dataclass(frozen=True)
class AddSkillRule(Edit):
    """Add a rule ``- text {#rule_id}`` to a skill, at the end of ``section`` (or of the body)."""

    op: ClassVar[str] = "add_skill_rule"
    skill: str
    rule_id: str
    text: str
    section: str = ""

    def describe(self) -> str:
        return f"add rule {{#{self.rule_id}}} to skill {self.skill}: {self.text}"

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        what = f"add_skill_rule {self.skill}#{self.rule_id}"
        path = _valid_skill(files, self.skill, what)
        return {
            **files,
            path: _text_edit(
                what,
                insert_rule,
                files[path],
                rule_id=self.rule_id,
                text=self.text,
                section=self.section,
                file=path,
            ),
        }


@dataclass(frozen=True)
class ChangeSkillRule(Edit):
    """Replace the text of rule ``rule_id`` of a skill; empty ``text`` removes the rule."""

    op: ClassVar[str] = "change_skill_rule"
    skill: str
    rule_id: str
    text: str

    def describe(self) -> str:
        if not self.text.strip():
            return f"remove rule {{#{self.rule_id}}} from skill {self.skill}"
        return f"change rule {{#{self.rule_id}}} of skill {self.skill} to: {self.text}"

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        what = f"change_skill_rule {self.skill}#{self.rule_id}"
        path = _valid_skill(files, self.skill, what)
        return {
            **files,
            path: _text_edit(
                what, replace_rule, files[path], rule_id=self.rule_id, text=self.text, file=path
            ),
        }


@dataclass(frozen=True)
class AddRefusalExclusion(Edit):
    """Tell the refusal skill not to refuse a kind of legitimate request (over-triggered
    refusals)."""

    op: ClassVar[str] = "add_refusal_exclusion"
    rule_id: str
    text: str
    skill: str = "refusal"

    def describe(self) -> str:
        return f"add refusal exclusion {{#{self.rule_id}}} to {self.skill}: {self.text}"

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        return AddSkillRule(skill=self.skill, rule_id=self.rule_id, text=self.text).apply(files)


@dataclass(frozen=True)
class AddHook(Edit):
    """Append a hook (a ``hooks.yaml`` item: id, event, type, matcher, params, on_fail)."""

    op: ClassVar[str] = "add_hook"
    hook: dict = field(default_factory=dict)

    def describe(self) -> str:
        return (
            f"add hook {self.hook.get('id')} ({self.hook.get('type')} at {self.hook.get('event')})"
        )

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        what = f"add_hook {self.hook.get('id')!r}"
        if not isinstance(self.hook, dict) or not self.hook.get("id"):
            raise EditError(f"{what}: hook must be a mapping with at least id, event and type")
        text = _need(files, "hooks.yaml", what)
        return {**files, "hooks.yaml": _text_edit(what, insert_hook, text, self.hook)}


@dataclass(frozen=True)
class TightenHook(Edit):
    """Change an existing hook: merge ``params`` into its params, set ``on_fail`` / ``matcher``."""

    op: ClassVar[str] = "tighten_hook"
    hook_id: str
    params: dict = field(default_factory=dict)
    on_fail: dict = field(default_factory=dict)
    matcher: str | None = None

    def describe(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self.params.items()]
        if self.on_fail:
            parts.append(f"on_fail={self.on_fail}")
        if self.matcher is not None:
            parts.append(f"matcher={self.matcher!r}")
        return f"change hook {self.hook_id}: {', '.join(parts) or 'no change'}"

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        what = f"tighten_hook {self.hook_id!r}"
        text = _need(files, "hooks.yaml", what)
        hooks = {h.get("id"): h for h in _text_edit(what, read_hooks, text) if isinstance(h, dict)}
        if self.hook_id not in hooks:
            raise EditError(
                f"{what}: hooks.yaml has no hook {self.hook_id!r} "
                f"(hooks: {', '.join(map(str, hooks))})"
            )
        item = dict(hooks[self.hook_id])
        if self.params:
            item["params"] = {**(item.get("params") or {}), **self.params}
        if self.on_fail:
            item["on_fail"] = {**(item.get("on_fail") or {}), **self.on_fail}
        if self.matcher is not None:
            item["matcher"] = self.matcher
        return {**files, "hooks.yaml": _text_edit(what, replace_hook, text, self.hook_id, item)}


@dataclass(frozen=True)
class RequireToolCall(Edit):
    """A stop hook: a reply making a ``claim`` (price, stock, promotion) needs one of ``tools``
    first."""

    op: ClassVar[str] = "require_tool_call"
    claim: str
    tools: list = field(default_factory=list)
    hook_id: str = ""
    message: str = ""

    def describe(self) -> str:
        return f"require one of {', '.join(self.tools)} before a {self.claim} claim"

    def hook(self) -> dict:
        tools = list(self.tools)
        return {
            "id": self.hook_id or f"{self.claim}-needs-tool",
            "event": "stop",
            "type": "require_tool_before_claim",
            "params": {"claim": self.claim, "tools": tools},
            "on_fail": {
                "action": "retry",
                "message": self.message
                or (
                    f"You stated a {self.claim} without a tool result in this request. "
                    f"Call {tools[0] if tools else 'the tool'} first."
                ),
            },
        }

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        if not self.tools:
            raise EditError(f"require_tool_call {self.claim!r}: tools must name at least one tool")
        return AddHook(hook=self.hook()).apply(files)


@dataclass(frozen=True)
class SetConstraint(Edit):
    """Set a numeric constraint of ``prompt.yaml`` (max_reply_chars, max_rounds, ...)."""

    op: ClassVar[str] = "set_constraint"
    name: str
    value: float | int = 0

    def describe(self) -> str:
        return f"set constraint {self.name} = {self.value}"

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        what = f"set_constraint {self.name!r}"
        if not re.match(r"^[a-z_][a-z0-9_]*$", self.name or ""):
            raise EditError(f"{what}: name must be a constraint key such as max_reply_chars")
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            raise EditError(f"{what}: value must be a number, got {self.value!r}")
        lines = _need(files, "prompt.yaml", what).split("\n")
        start = next((i for i, line in enumerate(lines) if line.rstrip() == "constraints:"), None)
        if start is None:
            raise EditError(f"{what}: prompt.yaml has no top-level 'constraints:' mapping")
        end = start + 1
        while end < len(lines) and (not lines[end].strip() or lines[end][:1] in (" ", "\t")):
            end += 1
        value = int(self.value) if float(self.value).is_integer() else self.value
        for i in range(start + 1, end):
            m = re.match(rf"^(\s+){re.escape(self.name)}:\s*\S.*$", lines[i])
            if m:
                lines[i] = f"{m.group(1)}{self.name}: {value}"
                break
        else:
            indent = next(
                (
                    re.match(r"^(\s+)", line).group(1)
                    for line in lines[start + 1 : end]
                    if line.strip()
                ),
                "  ",
            )
            last = end
            while last > start + 1 and not lines[last - 1].strip():
                last -= 1
            lines.insert(last, f"{indent}{self.name}: {value}")
        return {**files, "prompt.yaml": "\n".join(lines)}


EDIT_TYPES: dict[str, type[Edit]] = {
    cls.op: cls
    for cls in (
        AddSkillRule,
        ChangeSkillRule,
        AddRefusalExclusion,
        AddHook,
        TightenHook,
        RequireToolCall,
        SetConstraint,
    )
}


def edit_from_dict(data: Any, *, where: str = "edit") -> Edit:
    """Build an edit from its JSON; the error names the field and the valid choices."""
    if not isinstance(data, dict):
        raise EditError(f"{where}: must be an object with an 'op' field, got {type(data).__name__}")
    op = data.get("op")
    cls = EDIT_TYPES.get(op)
    if cls is None:
        raise EditError(f"{where}.op: {op!r} is not an edit; valid: {', '.join(EDIT_TYPES)}")
    fields = {f for f in cls.__dataclass_fields__}
    unknown = sorted(set(data) - fields - {"op"})
    if unknown:
        raise EditError(
            f"{where}: unknown field(s) {', '.join(unknown)} for {op}; "
            f"valid: {', '.join(sorted(fields))}"
        )
    try:
        return cls(**{k: v for k, v in data.items() if k != "op"})
    except TypeError as exc:
        raise EditError(f"{where}: {op} {exc}") from None


def apply_edits(files: dict[str, str], edits: list[Edit]) -> tuple[dict[str, str], Bundle]:
    """Apply edits in order and validate the result; raises EditError listing every problem."""
    result = dict(files)
    for edit in edits:
        result = edit.apply(result)
    try:
        bundle = load_mapping(result, source="proposal")
    except HarnessValidationError as exc:
        shown = "; ".join(str(p) for p in exc.problems[:10])
        raise EditError(f"the edited Harness does not validate: {shown}") from None
    return bundle.to_mapping(), bundle
