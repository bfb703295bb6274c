"""Structured edits on Harness files, applied as small text patches and validated.

A diagnosis proposes *edits*, not free text: add or change a skill rule (by
rule id), add a refusal exclusion, add a hook or tighten one, change a numeric
constraint, require a tool call before a kind of claim. Each edit is a small
dataclass that serialises to JSON (``to_dict`` / ``edit_from_dict``) so the
studio can store it and an LLM can write it, and that patches the file texts
in place (other lines stay byte-identical, so the diff a reviewer sees is the
change and nothing else). ``apply_edits`` runs every edit and then loads the
result through :func:`harness.load_mapping`, so an edit that would break the
Harness is refused with the validator's problems.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import yaml

from harness import HarnessValidationError, load_mapping
from harness.bundle import Bundle
from harness.skills import parse_skill
from harness.yamlio import dump_yaml

RULE_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_HOOK_ITEM = re.compile(r"^(\s*)-\s+id:\s*(\S+)\s*$")
_TOP_KEY = re.compile(r"^[A-Za-z_][\w-]*:")


class EditError(ValueError):
    """An edit cannot be applied; the message names the edit, the field and what is valid."""


def _skill_path(skill: str) -> str:
    return f"skills/{skill}/SKILL.md"


def _need(files: dict[str, str], path: str, what: str) -> str:
    if path not in files:
        raise EditError(f"{what}: {path} is not in the Harness")
    return files[path]


def _check_rule_id(rule_id: str, what: str) -> None:
    if not RULE_ID_PATTERN.match(rule_id or ""):
        raise EditError(f"{what}: rule_id {rule_id!r} must be 1-64 of a-z, 0-9, '.', '_' or '-'")


def _rule_span(lines: list[str], start: int) -> tuple[int, int]:
    """0-based [start, end) of the list item starting at line index ``start``."""
    end = start + 1
    while end < len(lines) and lines[end].strip() and lines[end][:1] in (" ", "\t"):
        end += 1
    return start, end


def _parsed_skill(files: dict[str, str], skill: str, what: str):
    path = _skill_path(skill)
    parsed, problems = parse_skill(_need(files, path, what), path=path)
    if parsed is None:
        raise EditError(f"{what}: {path} does not parse: {'; '.join(map(str, problems))}")
    return path, parsed


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
        _check_rule_id(self.rule_id, what)
        if not self.text.strip():
            raise EditError(f"{what}: text must say what the rule requires")
        path, parsed = _parsed_skill(files, self.skill, what)
        if parsed.rule(self.rule_id) is not None:
            raise EditError(f"{what}: skill {self.skill} already has rule {{#{self.rule_id}}}; "
                            "use change_skill_rule to change it")
        lines = files[path].split("\n")
        in_section = [r for r in parsed.rules if not self.section or r.section == self.section]
        if self.section and not in_section:
            heading = f"## {self.section}"
            body = lines[:]
            while body and not body[-1].strip():
                body.pop()
            insert_at, new = len(body), ["", heading, ""]
        else:
            anchor = (in_section or parsed.rules)
            if anchor:
                _, insert_at = _rule_span(lines, anchor[-1].line - 1)
            else:
                insert_at = len(lines)
                while insert_at and not lines[insert_at - 1].strip():
                    insert_at -= 1
            new = []
        new.append(f"- {' '.join(self.text.split())} {{#{self.rule_id}}}")
        lines[insert_at:insert_at] = new
        return {**files, path: "\n".join(lines)}


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
        path, parsed = _parsed_skill(files, self.skill, what)
        rule = parsed.rule(self.rule_id)
        if rule is None:
            known = ", ".join(r.id for r in parsed.rules) or "none"
            raise EditError(f"{what}: skill {self.skill} has no rule {{#{self.rule_id}}} (rules: {known})")
        lines = files[path].split("\n")
        start, end = _rule_span(lines, rule.line - 1)
        marker = f" {{#{self.rule_id}}}" if rule.explicit_id else ""
        bullet = re.match(r"^(\s*(?:[-*+]|\d+[.)])\s+)", lines[start]).group(1)
        lines[start:end] = [f"{bullet}{' '.join(self.text.split())}{marker}"] if self.text.strip() else []
        return {**files, path: "\n".join(lines)}


@dataclass(frozen=True)
class AddRefusalExclusion(Edit):
    """Tell the refusal skill not to refuse a kind of legitimate request (over-triggered refusals)."""

    op: ClassVar[str] = "add_refusal_exclusion"
    rule_id: str
    text: str
    skill: str = "refusal"

    def describe(self) -> str:
        return f"add refusal exclusion {{#{self.rule_id}}} to {self.skill}: {self.text}"

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        return AddSkillRule(skill=self.skill, rule_id=self.rule_id, text=self.text).apply(files)


def _hooks_items(text: str) -> tuple[list[str], int, int, str]:
    """Lines, [start, end) of the ``hooks:`` list, and the item indentation."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.rstrip() == "hooks:"), None)
    if start is None:
        raise EditError("hooks.yaml has no top-level 'hooks:' list to add to")
    end = start + 1
    while end < len(lines) and not _TOP_KEY.match(lines[end]):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    indent = next((m.group(1) for line in lines[start + 1:end] if (m := _HOOK_ITEM.match(line))), "  ")
    return lines, start + 1, end, indent


def _render_hook(hook: dict, indent: str) -> list[str]:
    rendered = dump_yaml([hook]).rstrip("\n").split("\n")
    return [indent + line if line else line for line in rendered]


def _hook_spans(lines: list[str], start: int, end: int) -> dict[str, tuple[int, int]]:
    heads = [(i, m.group(2)) for i in range(start, end) if (m := _HOOK_ITEM.match(lines[i]))]
    spans = {}
    for n, (i, hook_id) in enumerate(heads):
        spans[hook_id.strip("'\"")] = (i, heads[n + 1][0] if n + 1 < len(heads) else end)
    return spans


@dataclass(frozen=True)
class AddHook(Edit):
    """Append a hook (a ``hooks.yaml`` item: id, event, type, matcher, params, on_fail)."""

    op: ClassVar[str] = "add_hook"
    hook: dict = field(default_factory=dict)

    def describe(self) -> str:
        return (f"add hook {self.hook.get('id')} ({self.hook.get('type')} at "
                f"{self.hook.get('event')})")

    def apply(self, files: dict[str, str]) -> dict[str, str]:
        what = f"add_hook {self.hook.get('id')!r}"
        if not isinstance(self.hook, dict) or not self.hook.get("id"):
            raise EditError(f"{what}: hook must be a mapping with at least id, event and type")
        lines, start, end, indent = _hooks_items(_need(files, "hooks.yaml", what))
        if self.hook["id"] in _hook_spans(lines, start, end):
            raise EditError(f"{what}: hooks.yaml already has a hook with id {self.hook['id']!r}; "
                            "use tighten_hook to change it")
        lines[end:end] = _render_hook(self.hook, indent)
        return {**files, "hooks.yaml": "\n".join(lines)}


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
        lines, start, end, indent = _hooks_items(_need(files, "hooks.yaml", what))
        spans = _hook_spans(lines, start, end)
        if self.hook_id not in spans:
            raise EditError(f"{what}: hooks.yaml has no hook {self.hook_id!r} (hooks: {', '.join(spans)})")
        i, j = spans[self.hook_id]
        while j > i + 1 and not lines[j - 1].strip():
            j -= 1
        item = yaml.safe_load("\n".join(line[len(indent):] for line in lines[i:j]))[0]
        if self.params:
            item["params"] = {**(item.get("params") or {}), **self.params}
        if self.on_fail:
            item["on_fail"] = {**(item.get("on_fail") or {}), **self.on_fail}
        if self.matcher is not None:
            item["matcher"] = self.matcher
        lines[i:j] = _render_hook(item, indent)
        return {**files, "hooks.yaml": "\n".join(lines)}


@dataclass(frozen=True)
class RequireToolCall(Edit):
    """A stop hook: a reply making a ``claim`` (price, stock, promotion) needs one of ``tools`` first."""

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
                "message": self.message or (
                    f"You stated a {self.claim} without a tool result in this request. "
                    f"Call {tools[0] if tools else 'the tool'} first."),
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
            indent = next((re.match(r"^(\s+)", line).group(1) for line in lines[start + 1:end]
                           if line.strip()), "  ")
            last = end
            while last > start + 1 and not lines[last - 1].strip():
                last -= 1
            lines.insert(last, f"{indent}{self.name}: {value}")
        return {**files, "prompt.yaml": "\n".join(lines)}


EDIT_TYPES: dict[str, type[Edit]] = {
    cls.op: cls
    for cls in (AddSkillRule, ChangeSkillRule, AddRefusalExclusion, AddHook, TightenHook,
                RequireToolCall, SetConstraint)
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
        raise EditError(f"{where}: unknown field(s) {', '.join(unknown)} for {op}; "
                        f"valid: {', '.join(sorted(fields))}")
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
