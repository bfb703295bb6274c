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

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from harness.errors import Problem
from harness.schema import schema_problems
from harness.text_edit import (  # the one reader of SKILL.md text
    NAME_HINT,
    NAME_PATTERN,
    SKILL_KINDS,
    scan_rules,
    split_front_matter,
    strip_rule_ids,
)
from harness.yamlio import LineMap, load_yaml

SKILL_KIND_MEANINGS = {
    "reply": "how to answer one kind of viewer comment; the agent must load a reply skill "
    "before its final reply (the stop gate)",
    "strategy": "which tools to call, in which order, for a kind of request; loaded when it "
    "helps, it does not pass the stop gate",
}
KIND_MEANINGS = "; ".join(f"{kind} = {meaning}" for kind, meaning in SKILL_KIND_MEANINGS.items())
KIND_HINT = (
    KIND_MEANINGS + ". A public Agent Skills folder has no kind: give it when importing "
    "(python -m harness import-skill DIR --into BUNDLE --kind reply|strategy)"
)

# Inert files of a skill folder (paths relative to it): limits per skill.
SKILL_FILE_FOLDERS = ("references", "assets")
SKILL_FILE_ROOT_NAMES = ("LICENSE", "LICENSE.md", "LICENSE.txt")
SKILL_FILE_SUFFIXES = (
    ".md",
    ".markdown",
    ".txt",
    ".rst",
    ".json",
    ".jsonl",
    ".yaml",
    ".yml",
    ".toml",
    ".csv",
    ".tsv",
    ".xml",
    ".html",
    ".htm",
)
MAX_SKILL_FILES = 32
MAX_SKILL_FILE_BYTES = 64 * 1024
MAX_SKILL_FILES_BYTES = 512 * 1024
_NOT_CODE = "nothing in a Harness runs as code"

FRONT_MATTER_SCHEMA = {
    "type": "object",
    "required": ["name", "description", "kind"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": NAME_PATTERN, "x-hint": NAME_HINT},
        "description": {"type": "string", "minLength": 1, "maxLength": 1024},
        "kind": {"enum": list(SKILL_KINDS), "x-hint": KIND_HINT},
        "license": {"type": "string"},
        "compatibility": {"type": "string", "maxLength": 500},
        "allowed-tools": {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]
        },
        "metadata": {"type": "object", "properties": {"version": {"type": ["string", "number"]}}},
    },
}


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
        return strip_rule_ids(self.body)


def skill_file_problem(rel: str, text: str) -> str | None:
    """Why ``rel`` (a path inside a skill folder, not SKILL.md) cannot be kept, or None."""
    parts = rel.split("/")
    if parts[0] == "scripts":
        return (
            f"scripts/ is not kept: {_NOT_CODE}, so a skill's scripts have no place in "
            "it; keep SKILL.md and the text files under references/ and assets/"
        )
    unexpected = (
        rel not in SKILL_FILE_ROOT_NAMES if len(parts) == 1 else parts[0] not in SKILL_FILE_FOLDERS
    )
    if unexpected:
        return (
            "unexpected file in a skill folder; it holds SKILL.md, a LICENSE file and "
            "text files under references/ or assets/"
        )
    suffix = PurePosixPath(rel).suffix.lower()
    if len(parts) > 1 and suffix not in SKILL_FILE_SUFFIXES:
        return (
            f"{'the ' + suffix + ' extension' if suffix else 'a file without an extension'} "
            f"is not kept: {_NOT_CODE}, so files under references/ and assets/ are text "
            f"documents ({' '.join(SKILL_FILE_SUFFIXES)}); quote code in a Markdown file"
        )
    if text.startswith("#!"):
        return f"starts with '#!', the first line of a script; {_NOT_CODE}: remove that line"
    if len(text.encode("utf-8", "surrogatepass")) > MAX_SKILL_FILE_BYTES:
        return (
            f"file is larger than {MAX_SKILL_FILE_BYTES // 1024} KiB, the limit for a skill's file"
        )
    return None


def parse_rules(body: str, *, body_line: int, file: str) -> tuple[list[Rule], list[Problem]]:
    """The body's rules (read by :func:`harness.text_edit.scan_rules`) and what is wrong with
    them."""
    rules: list[Rule] = []
    problems: list[Problem] = []
    for span in scan_rules(body, first_line=body_line):
        if span.bad_id:
            problems.append(
                Problem(
                    file,
                    span.start,
                    f"rule '{span.bad_id}'",
                    "invalid rule id: use {#id} with 1-64 of a-z, 0-9, '.', '_' or '-'",
                )
            )
        if span.text:
            rules.append(Rule(span.id, span.text, span.section, span.start, span.explicit_id))
        else:
            problems.append(
                Problem(file, span.start, "rule", "empty rule (a list item with no text)")
            )
    seen: dict[str, Rule] = {}
    for rule in rules:
        if rule.id in seen:
            what = (
                "duplicate rule id" if rule.explicit_id else "duplicate rule (same text as the rule"
            )
            problems.append(
                Problem(
                    file,
                    rule.line,
                    f"rule {{#{rule.id}}}",
                    f"{what} at line {seen[rule.id].line}"
                    + ("" if rule.explicit_id else ")")
                    + "; rule ids must be unique within a skill",
                )
            )
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
            problems.append(
                Problem(
                    path,
                    2,
                    "(front matter)",
                    "front matter is empty: it needs name, description and kind",
                )
            )
        return None, problems
    if not isinstance(data, dict):
        return None, [
            *problems,
            Problem(path, 2, "(front matter)", "front matter must be a YAML mapping of fields"),
        ]
    problems += schema_problems(data, FRONT_MATTER_SCHEMA, linemap=linemap, file=path)
    name = data.get("name")
    if isinstance(name, str) and folder and name != folder:
        problems.append(
            Problem(
                path,
                linemap.line(("name",)),
                "name",
                f"'{name}' must equal its folder name '{folder}'",
            )
        )
    rules, rproblems = parse_rules(body, body_line=body_line, file=path)
    problems += rproblems
    if problems:
        return None, problems
    tools = data.get("allowed-tools") or ()
    tools = tuple(tools.split()) if isinstance(tools, str) else tuple(tools)
    return Skill(
        name=name,
        description=data["description"],
        kind=data["kind"],
        body=body,
        rules=rules,
        allowed_tools=tools,
        metadata=dict(data.get("metadata") or {}),
        front_matter=data,
        path=path,
        line_of=linemap,
    ), []
