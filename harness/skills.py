"""Skills: ``skills/<name>/SKILL.md`` files, Markdown with YAML front matter.

The front matter follows the public Agent Skills format (``name``,
``description``, optional ``license``, ``compatibility``, ``allowed-tools``,
``metadata``) plus our ``kind: reply | strategy``. The body's top-level list
items are the skill's *rules*. A rule may carry a stable id at its end,
``- Never promise delivery dates. {#no-delivery-promise}``; a rule without one
gets an id derived from its text (``r-1a2b3c``), which survives reordering and
edits of other rules. Ids let diffs, diagnosis proposals and augmentation
target a single rule.

Besides SKILL.md a skill folder may keep *inert files*: text documents under
``references/`` and ``assets/`` (and a ``LICENSE`` file), as public Agent Skills
folders carry them. The agent reads one on demand with
``load_skill("<skill>/references/<file>")``; nothing reads them as code, and
anything that looks like a program (``scripts/``, a program's file extension, a
``#!`` line) is refused, because nothing in a Harness runs.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from harness.errors import Problem
from harness.schema import schema_problems
from harness.yamlio import LineMap, dump_yaml, load_yaml

NAME_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
SKILL_KINDS = ("reply", "strategy")
SKILL_KIND_MEANINGS = {
    "reply": "how to answer one kind of viewer comment; the agent must load a reply skill "
             "before its final reply (the stop gate)",
    "strategy": "which tools to call, in which order, for a kind of request; loaded when it "
                "helps, it does not pass the stop gate",
}
KIND_MEANINGS = "; ".join(f"{kind} = {meaning}" for kind, meaning in SKILL_KIND_MEANINGS.items())
KIND_HINT = (KIND_MEANINGS + ". A public Agent Skills folder has no kind: give it when importing "
             "(python -m harness import-skill DIR --into BUNDLE --kind reply|strategy)")

# Inert files of a skill folder (paths relative to it): limits per skill.
SKILL_FILE_FOLDERS = ("references", "assets")
SKILL_FILE_ROOT_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt")
SKILL_FILE_SUFFIXES = (".md", ".markdown", ".txt", ".rst", ".json", ".jsonl", ".yaml", ".yml",
                       ".toml", ".csv", ".tsv", ".xml", ".html", ".htm")
MAX_SKILL_FILES = 32
MAX_SKILL_FILE_BYTES = 64 * 1024
MAX_SKILL_FILES_BYTES = 512 * 1024
_NOT_CODE = "nothing in a Harness runs as code"

FRONT_MATTER_SCHEMA = {
    "type": "object",
    "required": ["name", "description", "kind"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": NAME_PATTERN,
                 "x-hint": "1-64 characters of a-z, 0-9, '_' or '-', starting with a letter or digit"},
        "description": {"type": "string", "minLength": 1, "maxLength": 1024},
        "kind": {"enum": list(SKILL_KINDS), "x-hint": KIND_HINT},
        "license": {"type": "string"},
        "compatibility": {"type": "string", "maxLength": 500},
        "allowed-tools": {"anyOf": [{"type": "string"},
                                    {"type": "array", "items": {"type": "string"}}]},
        "metadata": {"type": "object", "properties": {"version": {"type": ["string", "number"]}}},
    },
}

_RULE_START = re.compile(r"^(?:[-*+]|\d+[.)])\s+(.*)$")
_RULE_ID = re.compile(r"\s*\{#([a-z0-9][a-z0-9._-]{0,63})\}\s*$")
_BAD_RULE_ID = re.compile(r"\{#([^}]*)\}\s*$")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class Rule:
    """One behavioural rule: a top-level list item of the skill body."""

    id: str
    text: str
    section: str
    line: int  # 1-based line in SKILL.md
    explicit_id: bool = False


@dataclass
class Skill:
    name: str
    description: str
    kind: str
    body: str
    rules: list[Rule]
    allowed_tools: tuple[str, ...] = ()
    metadata: dict = field(default_factory=dict)
    front_matter: dict = field(default_factory=dict)
    path: str = ""
    line_of: LineMap = field(default_factory=LineMap, repr=False)
    files: dict[str, str] = field(default_factory=dict)  # inert files: path in the folder -> text

    @property
    def version(self) -> str:
        return str(self.metadata.get("version", ""))

    def rule(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)

    def render_body(self) -> str:
        """The body as the model sees it: rule-id markers removed."""
        return "\n".join(_RULE_ID.sub("", line) for line in self.body.splitlines()).strip() + "\n"


def skill_file_problem(rel: str, text: str) -> str | None:
    """Why ``rel`` (a path inside a skill folder, not SKILL.md) cannot be kept, or None."""
    parts = rel.split("/")
    if parts[0] == "scripts":
        return (f"scripts/ is not kept: {_NOT_CODE}, so a skill's scripts have no place in "
                "it; keep SKILL.md and the text files under references/ and assets/")
    unexpected = (rel not in SKILL_FILE_ROOT_NAMES if len(parts) == 1
                  else parts[0] not in SKILL_FILE_FOLDERS)
    if unexpected:
        return ("unexpected file in a skill folder; it holds SKILL.md, a LICENSE file and "
                "text files under references/ or assets/")
    suffix = PurePosixPath(rel).suffix.lower()
    if len(parts) > 1 and suffix not in SKILL_FILE_SUFFIXES:
        return (f"{'the ' + suffix + ' extension' if suffix else 'a file without an extension'} "
                f"is not kept: {_NOT_CODE}, so files under references/ and assets/ are text "
                f"documents ({' '.join(SKILL_FILE_SUFFIXES)}); quote code in a Markdown file")
    if text.startswith("#!"):
        return f"starts with '#!', the first line of a script; {_NOT_CODE}: remove that line"
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SKILL_FILE_BYTES:
        return f"file is larger than {MAX_SKILL_FILE_BYTES // 1024} KiB, the limit for a skill's file"
    return None


def rule_auto_id(text: str) -> str:
    norm = " ".join(text.lower().split())
    return "r-" + hashlib.sha1(norm.encode()).hexdigest()[:6]


def split_front_matter(text: str, *, file: str) -> tuple[str | None, str, int, list[Problem]]:
    """Returns (front matter text, body, line where the body starts, problems)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return None, text, 1, [Problem(file, 1, "(front matter)",
                                       "SKILL.md must start with a '---' line, then YAML front "
                                       "matter (name, description, kind), then a closing '---'")]
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "\n".join(lines[1:i]), "\n".join(lines[i + 1:]), i + 2, []
    return None, text, 1, [Problem(file, 1, "(front matter)",
                                   "front matter is not closed: add a '---' line after it")]


def parse_rules(body: str, *, body_line: int, file: str) -> tuple[list[Rule], list[Problem]]:
    rules: list[Rule] = []
    problems: list[Problem] = []
    section = ""
    current: list[str] | None = None
    start = 0
    in_code = False

    def close():
        nonlocal current
        if current is None:
            return
        text = " ".join(s.strip() for s in current).strip()
        m = _RULE_ID.search(text)
        if m:
            rid, text, explicit = m.group(1), _RULE_ID.sub("", text).strip(), True
        else:
            bad = _BAD_RULE_ID.search(text)
            if bad:
                problems.append(Problem(file, start, f"rule '{bad.group(0).strip()}'",
                                        "invalid rule id: use {#id} with 1-64 of a-z, 0-9, "
                                        "'.', '_' or '-'"))
            rid, explicit = rule_auto_id(text), False
        if text:
            rules.append(Rule(rid, text, section, start, explicit))
        else:
            problems.append(Problem(file, start, "rule", "empty rule (a list item with no text)"))
        current = None

    for offset, line in enumerate(body.split("\n")):
        lineno = body_line + offset
        if line.lstrip().startswith("```"):
            close()
            in_code = not in_code
            continue
        if in_code:
            continue
        heading = _HEADING.match(line)
        m = _RULE_START.match(line)
        if heading:
            close()
            section = heading.group(1)
        elif m:
            close()
            current, start = [m.group(1)], lineno
        elif current is not None and line.strip() and line[:1] in (" ", "\t"):
            current.append(line)
        elif not line.strip() and current is not None or line.strip():
            close()
    close()
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in seen:
            what = ("duplicate rule id" if rule.explicit_id
                    else "duplicate rule (same text as the rule")
            problems.append(Problem(file, rule.line, f"rule {{#{rule.id}}}",
                                    f"{what} at line {seen[rule.id].line}"
                                    + ("" if rule.explicit_id else ")")
                                    + "; rule ids must be unique within a skill"))
        else:
            seen[rule.id] = rule
    return rules, problems


def parse_skill(text: str, *, path: str) -> tuple[Skill | None, list[Problem]]:
    folder = path.split("/")[1] if path.count("/") >= 2 else ""
    fm_text, body, body_line, problems = split_front_matter(text, file=path)
    if fm_text is None:
        return None, problems
    data, linemap, yproblems = load_yaml(fm_text, file=path, line_offset=1)
    problems += yproblems
    if data is None:
        if not yproblems:
            problems.append(Problem(path, 2, "(front matter)",
                                    "front matter is empty: it needs name, description and kind"))
        return None, problems
    if not isinstance(data, dict):
        return None, [*problems, Problem(path, 2, "(front matter)",
                                         "front matter must be a YAML mapping of fields")]
    problems += schema_problems(data, FRONT_MATTER_SCHEMA, linemap=linemap, file=path)
    name = data.get("name")
    if isinstance(name, str) and folder and name != folder:
        problems.append(Problem(path, linemap.line(("name",)), "name",
                                f"'{name}' must equal its folder name '{folder}'"))
    rules, rproblems = parse_rules(body, body_line=body_line, file=path)
    problems += rproblems
    if problems:
        return None, problems
    tools = data.get("allowed-tools") or ()
    tools = tuple(tools.split()) if isinstance(tools, str) else tuple(tools)
    return Skill(name=name, description=data["description"], kind=data["kind"], body=body,
                 rules=rules, allowed_tools=tools, metadata=dict(data.get("metadata") or {}),
                 front_matter=data, path=path, line_of=linemap), []


def render_skill(front_matter: dict, body: str) -> str:
    """SKILL.md text from front matter and body (used by augmentation and the editor)."""
    return "---\n" + dump_yaml(front_matter) + "---\n" + body.lstrip("\n")
