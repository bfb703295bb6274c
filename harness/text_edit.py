"""Harness text as people write it: the one reader of SKILL.md rules, and edits that keep layout.

Skills, augmentation, diagnosis edits and the studio's forms all touch the
same text, so its lexical pieces are defined here once: what a skill name, a
kind, an id (of a rule or a hook), a hook event and action may be (the
validators return why a value is refused, or None, and the schemas of
``harness.skills`` and ``harness.hooks`` use the same patterns); where the
front matter of a SKILL.md ends; which lines of a body are its rules
(:func:`scan_rules`, the one rule reader, which ``harness.skills`` validates and
``harness.augment.editable`` rewrites).

The edits work on the text, not on re-rendered data: a rule inserted into a
skill or a hook inserted into ``hooks.yaml`` adds its lines and every other
line of the file stays byte for byte, comments and formatting included, so the
diff a reviewer sees is the change. ``hooks.yaml`` is read with
``harness.yamlio.load_yaml`` (the bounded reader) to find the items, so the
``hooks:`` list may stand anywhere in the file. An edit that cannot be made
raises :class:`TextEditError` naming the file, line or field and what would be
valid.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

from harness.errors import Problem
from harness.hook_catalogue import ACTIONS, EVENTS
from harness.yamlio import dump_yaml, load_yaml

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
NAME_HINT = "1-64 characters of a-z, 0-9, '_' or '-', starting with a letter or digit"
ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
ID_HINT = (
    "use 1-64 lower-case letters (a-z), digits, '.', '_' or '-', starting with a letter or digit"
)
SKILL_KINDS = ("reply", "strategy")
HOOKS_FILE = "hooks.yaml"


class TextEditError(ValueError):
    """An edit of Harness text cannot be made; the message says where and what would be valid."""


# --- validators: one definition each ---------------------------------------------------------


def skill_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a skill (its folder and front matter ``name``), or None."""
    if isinstance(name, str) and re.fullmatch(NAME_PATTERN, name):
        return None
    return f"{name!r} is not a skill name: use {NAME_HINT} (e.g. size_advice)"


def skill_kind_problem(kind: object) -> str | None:
    if kind in SKILL_KINDS:
        return None
    return f"{kind!r} is not a skill kind; choose {' or '.join(SKILL_KINDS)}"


def id_problem(value: object) -> str | None:
    """Why ``value`` cannot be the id of a rule (``{#id}``) or of a hook, or None."""
    if isinstance(value, str) and re.fullmatch(ID_PATTERN, value):
        return None
    return f"{value!r} is not an id; {ID_HINT} (e.g. price-needs-tool)"


def hook_event_problem(event: object) -> str | None:
    if event in EVENTS:
        return None
    return f"{event!r} is not a hook event; choose {', '.join(EVENTS)}"


def hook_action_problem(action: object) -> str | None:
    if action in ACTIONS:
        return None
    return f"{action!r} is not an action; choose {', '.join(ACTIONS[:-1])} or {ACTIONS[-1]}"


# --- SKILL.md: front matter, rules, template -------------------------------------------------

_RULE_START = re.compile(r"^(([-*+]|\d+[.)])\s+)(.*)$")
_RULE_ID = re.compile(r"\s*\{#([a-z0-9][a-z0-9._-]{0,63})\}\s*$")
_BAD_RULE_ID = re.compile(r"\{#([^}]*)\}\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")

SKILL_TEMPLATE_BODY = "# {name}\n\n- Describe one behaviour rule per list item.\n"
"""The body of a skill added from the editor's "add a skill" form."""


def split_front_matter(text: str, *, file: str) -> tuple[str | None, str, int, list[Problem]]:
    """Returns (front matter text, body, line where the body starts, problems)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return (
            None,
            text,
            1,
            [
                Problem(
                    file,
                    1,
                    "(front matter)",
                    "SKILL.md must start with a '---' line, then YAML front "
                    "matter (name, description, kind), then a closing '---'",
                )
            ],
        )
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1 :]), i + 2, []
    return (
        None,
        text,
        1,
        [
            Problem(
                file, 1, "(front matter)", "front matter is not closed: add a '---' line after it"
            )
        ],
    )


def rule_auto_id(text: str) -> str:
    """The id of a rule without ``{#id}``: from its text, so it survives edits of other rules."""
    norm = " ".join(text.lower().split())
    return "r-" + hashlib.sha1(norm.encode()).hexdigest()[:6]


@dataclass(frozen=True)
class RuleSpan:
    """Where one rule (a top-level list item of a skill body) stands, and what it says."""

    start: int  # 0-based index of its first line in the text it was scanned from
    end: int  # one past its last continuation line
    prefix: str  # the list marker with the spaces after it, as written ("- ", "1.  ")
    text: str  # its lines joined with single spaces, the {#id} removed
    id: str
    explicit_id: bool
    section: str  # the text of the heading above it ("" before any)
    bad_id: str = ""  # a trailing {#...} that is not a valid id, as written

    @property
    def marker(self) -> str:
        return self.prefix.strip()


def scan_rules(body: str, *, first_line: int = 0) -> list[RuleSpan]:
    """The rules of a skill body: top-level list items, outside fenced code, with their ids.

    A rule is a line starting with ``-``, ``*``, ``+`` or ``1.``/``1)`` and a
    space, plus the indented lines right after it; a blank or unindented line,
    or a code fence, ends it. ``first_line`` is added to every ``start``/``end`` (the body's
    offset in its file).
    """
    lines = body.split("\n")
    spans: list[RuleSpan] = []
    section = ""
    in_code = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_code = not in_code
        elif not in_code and (heading := _HEADING.match(line)):
            section = heading.group(1)
        elif not in_code and (m := _RULE_START.match(line)):
            end = i + 1
            while (
                end < len(lines)
                and lines[end].strip()
                and lines[end][:1] in (" ", "\t")
                and not lines[end].lstrip().startswith("```")
            ):
                end += 1
            text = " ".join([m.group(3).strip(), *(s.strip() for s in lines[i + 1 : end])]).strip()
            explicit = _RULE_ID.search(text)
            bad = (
                "" if explicit else (b.group(0).strip() if (b := _BAD_RULE_ID.search(text)) else "")
            )
            if explicit:
                rule_id, text = explicit.group(1), _RULE_ID.sub("", text).strip()
            else:
                rule_id = rule_auto_id(text)
            spans.append(
                RuleSpan(
                    first_line + i,
                    first_line + end,
                    m.group(1),
                    text,
                    rule_id,
                    bool(explicit),
                    section,
                    bad,
                )
            )
            i = end
            continue
        i += 1
    return spans


def strip_rule_ids(body: str) -> str:
    """The body as the model sees it: the ``{#id}`` markers removed."""
    return "\n".join(_RULE_ID.sub("", line) for line in body.splitlines()).strip() + "\n"


def render_skill(
    front_matter: dict, body: str, *, dump: Callable[[object], str] = dump_yaml
) -> str:
    """SKILL.md text from front matter and body (the template, augmentation)."""
    return "---\n" + dump(front_matter) + "---\n" + body.lstrip("\n")


def new_skill_text(*, name: str, kind: str, description: str = "") -> str:
    """A new SKILL.md from the template; the description is kept on one line."""
    for field, problem in (("name", skill_name_problem(name)), ("kind", skill_kind_problem(kind))):
        if problem:
            raise TextEditError(f"{field}: {problem}")
    description = " ".join(description.split()) or f"When to use {name}."
    return render_skill(
        {"name": name, "description": description, "kind": kind, "metadata": {"version": 1}},
        SKILL_TEMPLATE_BODY.format(name=name),
    )


def _skill_rules(text: str, file: str) -> tuple[list[str], list[RuleSpan]]:
    _front, body, body_line, problems = split_front_matter(text, file=file)
    if problems:
        raise TextEditError(str(problems[0]))
    return text.split("\n"), scan_rules(body, first_line=body_line - 1)


def insert_rule(
    skill_text: str, *, rule_id: str, text: str, section: str = "", file: str = "SKILL.md"
) -> str:
    """``skill_text`` with the rule ``- <text> {#rule_id}`` added after the last rule of
    ``section``.

    Without ``section`` the rule goes after the skill's last rule. A section
    whose heading has no rules yet gets it at its end; a section with no
    heading is added, under a ``##`` heading, at the end of the skill. Every
    other line is kept as it was.
    """
    if problem := id_problem(rule_id):
        raise TextEditError(f"{file}: rule_id {problem}")
    line = " ".join(text.split())
    if not line:
        raise TextEditError(f"{file}: rule {{#{rule_id}}}: text: say what the rule requires")
    new = f"- {line} {{#{rule_id}}}"
    lines, rules = _skill_rules(skill_text, file)
    if any(r.id == rule_id for r in rules):
        raise TextEditError(
            f"{file}: the skill already has rule {{#{rule_id}}}; change that rule "
            "instead, or pick another id"
        )
    anchor = [r for r in rules if r.section == section] if section else rules
    if anchor:
        lines[anchor[-1].end : anchor[-1].end] = [new]
        return "\n".join(lines)
    heading = next(
        (
            i
            for i, text_line in enumerate(lines)
            if section and (m := _HEADING.match(text_line)) and m.group(1) == section
        ),
        None,
    )
    if heading is None:  # a new section (or a skill without rules): at the end of the file
        end = len(lines)
        block = ["", f"## {section}", "", new] if section else ["", new]
    else:  # at the end of the section, before the next heading
        end = next(
            (i for i in range(heading + 1, len(lines)) if _HEADING.match(lines[i])), len(lines)
        )
        block = ["", new]
    at = end
    while at > 0 and not lines[at - 1].strip():
        at -= 1
    if at == end < len(lines):  # the next heading follows directly: keep a blank line before it
        block.append("")
    lines[at:at] = block
    return "\n".join(lines)


def replace_rule(skill_text: str, *, rule_id: str, text: str, file: str = "SKILL.md") -> str:
    """``skill_text`` with rule ``rule_id`` rewritten as one line of ``text``; empty removes it."""
    lines, rules = _skill_rules(skill_text, file)
    rule = next((r for r in rules if r.id == rule_id), None)
    if rule is None:
        known = ", ".join(r.id for r in rules) or "none"
        raise TextEditError(f"{file}: the skill has no rule {{#{rule_id}}} (rules: {known})")
    marker = f" {{#{rule_id}}}" if rule.explicit_id else ""
    line = " ".join(text.split())
    lines[rule.start : rule.end] = [f"{rule.prefix}{line}{marker}"] if line else []
    return "\n".join(lines)


# --- hooks.yaml ------------------------------------------------------------------------------

_EMPTY_OR_COMMENT = re.compile(r"^\s*(\[\s*\])?\s*(#.*)?$")


@dataclass
class _HooksLayout:
    lines: list[str]
    hooks: list  # the parsed items
    starts: list[int]  # 0-based line of each item's '-'
    end: int  # one past the list's last line (before trailing blank lines and top-level comments)
    indent: str  # of the items' '-'


def _hooks_layout(text: str, file: str) -> _HooksLayout:
    data, linemap, problems = load_yaml(text, file=file)
    if problems:
        raise TextEditError(str(problems[0]))
    if not isinstance(data, dict) or "hooks" not in data:
        raise TextEditError(
            f"{file}: has no top-level 'hooks:' list to add to; start one with a 'hooks:' line"
        )
    lines = text.split("\n")
    key = linemap.line(("hooks",)) - 1
    hooks = data["hooks"] if data["hooks"] is not None else []
    rest = lines[key][len("hooks:") :] if lines[key].startswith("hooks:") else None
    if rest is None or not isinstance(hooks, list):
        raise TextEditError(
            f"{file}:{key + 1}: hooks: must be a list of hooks ('hooks:' then '- id: ...' items)"
        )
    flow = _EMPTY_OR_COMMENT.match(rest)
    if flow is None:
        raise TextEditError(
            f"{file}: line {key + 1}: the hooks list is written in flow style "
            "([...]); write it as a block list ('- id: ...' lines) to add to it here"
        )
    if flow.group(1):  # 'hooks: []': the list becomes a block list
        lines[key] = "hooks:" + rest.replace(flow.group(1), "", 1)
    starts = []
    for i in range(len(hooks)):
        line = linemap.line(("hooks", i)) - 1
        while line > key and not lines[line].lstrip().startswith("-"):
            line -= 1
        starts.append(line)
    end = next(
        (i for i in range(key + 1, len(lines)) if lines[i][:1] not in ("", " ", "\t", "#", "-")),
        len(lines),
    )
    while end > key + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    indent = (
        lines[starts[0]][: len(lines[starts[0]]) - len(lines[starts[0]].lstrip())]
        if starts
        else "  "
    )
    return _HooksLayout(lines, hooks, starts, end, indent)


def _render_hook(hook: dict, indent: str) -> list[str]:
    return [indent + line if line else line for line in dump_yaml([hook]).rstrip("\n").split("\n")]


def _check_hook(hook: object, file: str) -> str:
    if not isinstance(hook, dict):
        raise TextEditError(f"{file}: a hook is a mapping with at least id, event and type")
    if problem := id_problem(hook.get("id")):
        raise TextEditError(f"{file}: id: {problem}")
    return hook["id"]


def read_hooks(text: str, *, file: str = HOOKS_FILE) -> list:
    """The items of the ``hooks:`` list (raises TextEditError where the file cannot be edited)."""
    return _hooks_layout(text, file).hooks


def insert_hook(text: str, hook: dict, *, file: str = HOOKS_FILE) -> str:
    """``text`` with ``hook`` added as the last item of the ``hooks:`` list, wherever that list is.

    The item is written in block style at the indentation of the other items;
    the other lines, comments included, stay as they were.
    """
    hook_id = _check_hook(hook, file)
    layout = _hooks_layout(text, file)
    if any(isinstance(h, dict) and h.get("id") == hook_id for h in layout.hooks):
        raise TextEditError(
            f"{file}: already has a hook with id {hook_id!r}; change that hook "
            "instead, or pick another id"
        )
    layout.lines[layout.end : layout.end] = _render_hook(hook, layout.indent)
    return "\n".join(layout.lines)


def replace_hook(text: str, hook_id: str, hook: dict, *, file: str = HOOKS_FILE) -> str:
    """``text`` with the item of hook ``hook_id`` rewritten as ``hook``; its neighbours are kept."""
    _check_hook(hook, file)
    layout = _hooks_layout(text, file)
    ids = [h.get("id") if isinstance(h, dict) else None for h in layout.hooks]
    if hook_id not in ids:
        raise TextEditError(
            f"{file}: has no hook {hook_id!r} (hooks: {', '.join(str(i) for i in ids) or 'none'})"
        )
    n = ids.index(hook_id)
    start = layout.starts[n]
    end = layout.starts[n + 1] if n + 1 < len(layout.starts) else layout.end
    while end > start + 1 and (
        not layout.lines[end - 1].strip() or layout.lines[end - 1].lstrip().startswith("#")
    ):
        end -= 1  # blank lines and comments before the next item belong to it
    layout.lines[start:end] = _render_hook(hook, layout.indent)
    return "\n".join(layout.lines)
