"""A Harness bundle: the files of one Harness version, parsed and cross-checked.

A bundle is a set of text files (``manifest.yaml``, ``skills/<name>/SKILL.md``,
``tools.yaml``, ``prompt.yaml``, ``hooks.yaml``, optionally ``README.md`` and a
skill's inert files, ``skills/<name>/references/...``, ``assets/...``). The
same bundle is a directory on disk and a ``{path: text}`` mapping (how the
studio stores it); both load through :func:`load_mapping`, which collects every
problem in every file before raising. The digest is a SHA-256 over the
canonical files, so equal content means an equal digest wherever it lives.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from harness.errors import HarnessValidationError, Problem
from harness.hooks import HookSet, parse_hooks, referenced_names
from harness.prompt import PromptPipeline, parse_prompt
from harness.schema import load_checked_yaml
from harness.skills import (
    MAX_SKILL_FILES,
    MAX_SKILL_FILES_BYTES,
    NAME_PATTERN,
    Skill,
    parse_skill,
    skill_file_problem,
)
from harness.tools import ToolRegistry, parse_tools

FORMAT = "harness-studio/v1"
REQUIRED_FILES = ("manifest.yaml", "tools.yaml", "prompt.yaml", "hooks.yaml")
MAX_FILE_BYTES = 256 * 1024
_SKILL_PATH = re.compile(r"^skills/([^/]+)/SKILL\.md$")
_SKILL_FILE_PATH = re.compile(r"^skills/([^/]+)/(.+)$")
# One rule for a bundle file's path at every door (editor, imports, zip, validate): a path is shown
# on pages, put in links and forms, and written under a folder, so it holds only these characters.
_PATH_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
MAX_PATH_CHARS = 255
PATH_RULE = (
    "a relative path of '/'-separated names of A-Z, a-z, 0-9, '_', '-' and '.' (not first), "
    f"at most {MAX_PATH_CHARS} characters, e.g. skills/aftersale/references/returns.md"
)

MANIFEST_SCHEMA = {
    "type": "object",
    "required": ["format", "name"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "name": {
            "type": "string",
            "pattern": NAME_PATTERN,
            "x-hint": "1-64 of a-z, 0-9, '_' or '-'",
        },
        "version": {"type": ["string", "number"]},
        "description": {"type": "string"},
        "language": {
            "type": "string",
            "pattern": r"^[a-z]{2}(-[A-Z]{2})?$",
            "x-hint": "a language code such as en or en-US",
        },
        "owner": {"type": "string"},
    },
}


def normalise_text(text: str) -> str:
    """Canonical file text: LF line ends and exactly one final newline."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.rstrip("\n") + "\n"


@dataclass
class Manifest:
    name: str
    version: str = ""
    description: str = ""
    language: str = "en"
    owner: str = ""


@dataclass
class Bundle:
    """A validated Harness. Build it with :func:`load_dir` or :func:`load_mapping`."""

    files: dict[str, str]
    manifest: Manifest
    skills: dict[str, Skill]
    tool_registry: ToolRegistry
    prompt: PromptPipeline
    hook_set: HookSet
    source: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def tools(self):
        return self.tool_registry.tools

    @property
    def mcp_servers(self):
        return self.tool_registry.mcp_servers

    @property
    def hooks(self):
        return self.hook_set.hooks

    @property
    def constraints(self) -> dict:
        return self.prompt.constraints

    @cached_property
    def digest(self) -> str:
        return files_digest(self.files)

    def reply_skills(self) -> list[Skill]:
        return [s for s in self.skills.values() if s.kind == "reply"]

    def strategy_skills(self) -> list[Skill]:
        return [s for s in self.skills.values() if s.kind == "strategy"]

    def to_mapping(self) -> dict[str, str]:
        return dict(self.files)

    def dump_dir(self, path: str | Path) -> Path:
        return dump_dir(self.files, path)

    def with_files(self, changes: dict[str, str | None]) -> Bundle:
        """A new validated bundle with some files replaced (None deletes a file)."""
        files = dict(self.files)
        for p, text in changes.items():
            if text is None:
                files.pop(p, None)
            else:
                files[p] = text
        return load_mapping(files, source=self.source)

    def summary(self) -> str:
        reply, strategy = len(self.reply_skills()), len(self.strategy_skills())
        return (
            f"{self.name}: {len(self.skills)} skills ({reply} reply, {strategy} strategy), "
            f"{len(self.tools)} tools, {len(self.prompt.blocks)} prompt blocks, "
            f"{len(self.hooks)} hooks"
        )


def files_digest(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for path in sorted(files):
        data = normalise_text(files[path]).encode()
        h.update(f"{path}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def validate_mapping(files: dict[str, str]) -> list[Problem]:
    """Every problem of a bundle given as ``{path: text}``; never raises on bad input."""
    _bundle, problems = _build(files)
    return problems


def load_mapping(files: dict[str, str], *, source: str = "") -> Bundle:
    bundle, problems = _build(files, source=source)
    if problems:
        raise HarnessValidationError(problems)
    return bundle


def read_dir(path: str | Path) -> tuple[dict[str, str], list[Problem]]:
    """The bundle files under a directory (hidden files and caches skipped)."""
    root = Path(path)
    if not root.is_dir():
        return {}, [Problem(str(path), 0, "(bundle)", "not a directory")]
    files, problems = {}, []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_dir() or any(
            part.startswith(".") or part == "__pycache__" for part in rel.split("/")
        ):
            continue
        if not p.is_file():  # a dangling link, a FIFO or a device would fail or block
            problems.append(Problem(rel, 0, "(file)", "not a regular file"))
            continue
        try:
            with p.open("rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)  # bounded: the limit is checked here
        except OSError as exc:
            problems.append(Problem(rel, 0, "(file)", f"cannot read ({exc.strerror or exc})"))
            continue
        if len(data) > MAX_FILE_BYTES:
            problems.append(
                Problem(rel, 0, "(file)", f"file is larger than {MAX_FILE_BYTES // 1024} KiB")
            )
            continue
        try:
            files[rel] = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(Problem(rel, 0, "(file)", f"not UTF-8 text: {exc.reason}"))
    return files, problems


def load_dir(path: str | Path) -> Bundle:
    files, problems = read_dir(path)
    if problems:
        raise HarnessValidationError(problems)
    return load_mapping(files, source=str(path))


def dump_dir(files: dict[str, str], path: str | Path) -> Path:
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in sorted(files.items()):
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(normalise_text(text), encoding="utf-8")
    return root


def path_problem(path: str) -> str | None:
    """Why ``path`` is not a well-formed bundle path (characters, '..', '//', dot-files, length), or
    None."""
    if not isinstance(path, str) or not path:
        return f"an empty path; give {PATH_RULE}"
    if len(path) > MAX_PATH_CHARS:
        return f"the path is {len(path)} characters; give {PATH_RULE}"
    if not all(_PATH_PART.fullmatch(part) for part in path.split("/")):
        return f"not a safe bundle path ({path!r}); give {PATH_RULE}"
    return None


def _path_problem(path: str, text: str) -> str | None:
    """Why ``path`` cannot be a file of a bundle, or None."""
    if malformed := path_problem(path):
        return malformed
    if path in REQUIRED_FILES or path == "README.md" or _SKILL_PATH.match(path):
        return None
    skill_file = _SKILL_FILE_PATH.match(path)
    if skill_file:
        return skill_file_problem(skill_file.group(2), text)
    return (
        "unexpected file; a bundle holds manifest.yaml, tools.yaml, prompt.yaml, hooks.yaml, "
        "README.md and skills/<name>/ folders (SKILL.md, a LICENSE, text files under "
        "references/ and assets/; no scripts or other files)"
    )


def _skill_files(
    canonical: dict[str, str], skills: dict[str, Skill], problems: list[Problem]
) -> None:
    """Attach each skill folder's inert files to its skill; a folder without SKILL.md is a
    problem."""
    by_folder: dict[str, dict[str, str]] = {}
    for path, text in canonical.items():
        match = _SKILL_FILE_PATH.match(path)
        if match and not _SKILL_PATH.match(path):
            by_folder.setdefault(match.group(1), {})[match.group(2)] = text
    for folder, files in sorted(by_folder.items()):
        first = f"skills/{folder}/{min(files)}"
        if f"skills/{folder}/SKILL.md" not in canonical:
            problems.append(
                Problem(
                    first, 0, "(file)", f"belongs to no skill: skills/{folder}/SKILL.md is missing"
                )
            )
            continue
        size = sum(len(text.encode("utf-8", "surrogatepass")) for text in files.values())
        if len(files) > MAX_SKILL_FILES:
            problems.append(
                Problem(
                    f"skills/{folder}/",
                    0,
                    "(files)",
                    f"{len(files)} files besides SKILL.md; a skill keeps at most "
                    f"{MAX_SKILL_FILES} files",
                )
            )
        elif size > MAX_SKILL_FILES_BYTES:
            problems.append(
                Problem(
                    f"skills/{folder}/",
                    0,
                    "(files)",
                    f"its files hold {size // 1024} KiB; a skill keeps at most "
                    f"{MAX_SKILL_FILES_BYTES // 1024} KiB besides SKILL.md",
                )
            )
        elif folder in skills:
            skills[folder].files = dict(sorted(files.items()))


def _build(files: dict[str, str], *, source: str = "") -> tuple[Bundle | None, list[Problem]]:
    problems: list[Problem] = []
    canonical: dict[str, str] = {}
    for path, text in files.items():
        if not isinstance(path, str) or not isinstance(text, str):
            problems.append(Problem(str(path), 0, "(file)", "paths and contents must be text"))
            continue
        refused = _path_problem(path, text)
        if refused:
            problems.append(Problem(path, 0, "(file)", refused))
            continue
        if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
            problems.append(
                Problem(path, 0, "(file)", f"file is larger than {MAX_FILE_BYTES // 1024} KiB")
            )
            continue
        if "\x00" in text:
            problems.append(Problem(path, 0, "(file)", "file contains NUL bytes; text only"))
            continue
        canonical[path] = normalise_text(text)
    for required in REQUIRED_FILES:
        if required not in files:
            problems.append(Problem(required, 0, "(file)", "required file is missing"))

    manifest = _parse_manifest(canonical.get("manifest.yaml"), problems)
    tools = prompt = hooks = None
    if "tools.yaml" in canonical:
        tools, p = parse_tools(canonical["tools.yaml"])
        problems += p
    if "prompt.yaml" in canonical:
        prompt, p = parse_prompt(canonical["prompt.yaml"])
        problems += p
    if "hooks.yaml" in canonical:
        hooks, p = parse_hooks(canonical["hooks.yaml"])
        problems += p
    skills: dict[str, Skill] = {}
    for path in sorted(canonical):
        if _SKILL_PATH.match(path):
            skill, p = parse_skill(canonical[path], path=path)
            problems += p
            if skill is not None:
                skills[skill.name] = skill
    _skill_files(canonical, skills, problems)
    skill_paths = [p for p in canonical if _SKILL_PATH.match(p)]
    if not skill_paths:
        problems.append(
            Problem("skills/", 0, "(skills)", "no skills: add skills/<name>/SKILL.md files")
        )
    elif len(skills) == len(skill_paths) and not any(s.kind == "reply" for s in skills.values()):
        problems.append(
            Problem(
                "skills/",
                0,
                "(skills)",
                "no reply skill: at least one skill needs 'kind: reply' so the "
                "agent can pass the stop gate",
            )
        )
    if tools is not None:
        problems += _cross_check(skills, tools, hooks, complete=len(skills) == len(skill_paths))
    if problems or manifest is None or tools is None or prompt is None or hooks is None:
        return None, sorted(set(problems))
    return Bundle(canonical, manifest, skills, tools, prompt, hooks, source), []


def _parse_manifest(text: str | None, problems: list[Problem]) -> Manifest | None:
    if text is None:
        return None
    data, _linemap, p = load_checked_yaml(
        text,
        MANIFEST_SCHEMA,
        file="manifest.yaml",
        not_mapping=f"manifest.yaml must be a mapping with format: {FORMAT} and name",
    )
    if p:
        problems += p
        return None
    return Manifest(
        data["name"],
        str(data.get("version", "")),
        data.get("description", ""),
        data.get("language", "en"),
        data.get("owner", ""),
    )


def _cross_check(
    skills: dict[str, Skill], tools: ToolRegistry, hooks: HookSet | None, *, complete: bool
) -> list[Problem]:
    problems = []
    names = set(tools.names)
    for skill in skills.values():
        for tool in skill.allowed_tools:
            if tool not in names:
                problems.append(
                    Problem(
                        skill.path,
                        skill.line_of.line(("allowed-tools",)),
                        "allowed-tools",
                        f"names tool '{tool}', which tools.yaml does not declare"
                        f" (declared: {', '.join(sorted(names))})",
                    )
                )
    if skills and not tools.by_role("load_skill"):
        problems.append(
            Problem(
                "tools.yaml",
                1,
                "tools",
                "no tool is bound to the built-in flow.load_skill, so skills "
                "could never be loaded; add one",
            )
        )
    if hooks is not None:
        for i, hook in enumerate(hooks.hooks):
            hook_tools, hook_skills = referenced_names(hook)
            for tool in hook_tools:
                if tool not in names:
                    problems.append(
                        Problem(
                            "hooks.yaml",
                            hooks.line_of.line(("hooks", i, "params")),
                            f"hooks[{i}].params",
                            f"hook '{hook.id}' names tool '{tool}', which "
                            "tools.yaml does not declare",
                        )
                    )
            for skill in hook_skills:
                if complete and skill not in skills:
                    problems.append(
                        Problem(
                            "hooks.yaml",
                            hooks.line_of.line(("hooks", i, "params")),
                            f"hooks[{i}].params",
                            f"hook '{hook.id}' names skill '{skill}', which has "
                            "no skills/<name>/SKILL.md",
                        )
                    )
            if (
                hook.matcher
                and hook.event in ("before_tool", "after_tool")
                and not any(hook.matches(n) for n in names)
            ):
                problems.append(
                    Problem(
                        "hooks.yaml",
                        hooks.line_of.line(("hooks", i, "matcher")),
                        f"hooks[{i}].matcher",
                        f"matcher '{hook.matcher}' matches no declared tool",
                    )
                )
    return problems
