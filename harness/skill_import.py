"""Import a public Agent Skills folder (agentskills.io) as a skill of a Harness.

A public skill is a folder: ``SKILL.md`` (front matter with ``name`` and
``description``), optionally ``references/`` (documents), ``assets/``
(templates, data) and ``scripts/`` (code the agent is meant to run). A Harness
skill also needs a ``kind``, and nothing in a Harness runs. So the import takes
the kind from the caller when the front matter has none, keeps the text files
of ``references/`` and ``assets/`` (and a LICENSE) as inert files the agent
reads with ``load_skill("<skill>/<path>")``, and refuses ``scripts/`` and
anything executable (an executable bit, a ``#!`` line, a program's extension, a
binary, a link), saying why. The new skill is validated together with the
bundle it joins; on any problem nothing is written.

:func:`skill_import` works on ``{path: text}`` (the studio passes the files of
an uploaded .zip); :func:`read_skill_dir` reads a folder from disk, bounded;
``python -m harness import-skill`` writes the skill into a bundle directory.
"""

from __future__ import annotations

import os
import shutil
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from harness.bundle import MAX_FILE_BYTES, dump_dir, load_mapping, read_dir, validate_mapping
from harness.errors import Problem
from harness.skills import KIND_MEANINGS, SKILL_KINDS, split_front_matter
from harness.text_edit import skill_name_problem
from harness.tools import parse_tools
from harness.userfiles import InputFileError, read_text
from harness.yamlio import load_yaml

# Files and folders looked at in a source folder before giving up (scripts and
# litter included, so well above what a skill may keep).
MAX_SOURCE_ENTRIES = 200
NOT_CODE = "nothing in a Harness runs as code"


@dataclass
class ImportedSkill:
    name: str
    kind: str
    files: dict[str, str]  # bundle path (skills/<name>/...) -> text
    bundle_problems: list[Problem] = field(default_factory=list)  # in other files of the bundle
    set_aside_tools: tuple[
        str, ...
    ] = ()  # allowed-tools this Harness does not declare (the host agent's)

    def tools_note(self) -> str:
        """What the import did with ``allowed-tools`` names this Harness has no tool for, or ""."""
        if not self.set_aside_tools:
            return ""
        return (
            f"allowed-tools: set aside {' '.join(self.set_aside_tools)} "
            "(the public skill's host-agent "
            "tools; this Harness declares no tool by that name), kept as a comment in SKILL.md"
        )

    def file_hint(self) -> str:
        """How the agent reads one of the skill's inert files, or "" when it has none."""
        prefix = f"skills/{self.name}/"
        inert = sorted(p[len(prefix) :] for p in self.files if p != f"{prefix}SKILL.md")
        if not inert:
            return ""
        first = next((p for p in inert if p.startswith("references/")), inert[0])
        return f'load_skill {{"name": "{self.name}/{first}"}}'


class SkillImportError(ValueError):
    """The folder cannot become a skill; ``problems`` name paths inside the source folder."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("; ".join(str(p) for p in self.problems))


def executable_problem(rel: str, mode: int, *, where: str = "") -> Problem:
    return Problem(
        rel,
        0,
        "(file)",
        f"is executable{where} (mode {mode & 0o777:o}); {NOT_CODE}: clear the bit "
        f"(chmod -x {rel}) or leave the file out",
    )


def link_problem(rel: str) -> Problem:
    return Problem(
        rel,
        0,
        "(file)",
        "is a symbolic link; the import copies plain files only, so "
        "a link cannot reach outside the skill: put the file itself there",
    )


def skill_import(
    source: dict[str, str], *, bundle_files: dict[str, str], kind: str | None, ask_kind: str
) -> ImportedSkill:
    """The skill files a public skill folder becomes in the bundle ``bundle_files``.

    ``source`` maps paths inside the folder to their text; ``ask_kind`` says how
    this caller's user gives a kind ("pass --kind ...", "choose one below").
    Raises :class:`SkillImportError` with every problem of the skill's files,
    at their path and line in the source folder.
    """
    if "SKILL.md" not in source:
        nested = sorted(p.rpartition("/")[0] + "/" for p in source if p.endswith("/SKILL.md"))
        where = (
            f"; {nested[0]} holds one: import that folder"
            if nested
            else f" (found {', '.join(sorted(source)[:5]) or 'no files'})"
        )
        raise SkillImportError(
            [Problem("SKILL.md", 0, "(skill)", "a skill folder has SKILL.md at its top" + where)]
        )
    fm_text, _body, body_line, problems = split_front_matter(source["SKILL.md"], file="SKILL.md")
    if fm_text is None:
        raise SkillImportError(problems)
    data, linemap, problems = load_yaml(fm_text, file="SKILL.md", line_offset=1)
    if problems:
        raise SkillImportError(problems)
    if not isinstance(data, dict):
        raise SkillImportError(
            [
                Problem(
                    "SKILL.md",
                    2,
                    "(front matter)",
                    "front matter must be a YAML mapping with name and description",
                )
            ]
        )
    name = data.get("name")
    if name_problem := skill_name_problem(name):
        raise SkillImportError([Problem("SKILL.md", linemap.line(("name",)), "name", name_problem)])
    problems = []
    if kind is not None and kind not in SKILL_KINDS:
        problems.append(
            Problem(
                "SKILL.md",
                0,
                "kind",
                f"{kind!r} is not a kind; use {' or '.join(SKILL_KINDS)}: {KIND_MEANINGS}",
            )
        )
    text, inserted_at = source["SKILL.md"], 0
    if "kind" in data:
        if kind is not None and data["kind"] != kind:
            problems.append(
                Problem(
                    "SKILL.md",
                    linemap.line(("kind",)),
                    "kind",
                    f"SKILL.md says kind: {data['kind']}, the import asks for "
                    f"{kind}; drop one of them",
                )
            )
    else:
        if kind is None:
            problems.append(
                Problem(
                    "SKILL.md",
                    1,
                    "kind",
                    f"SKILL.md has no kind, which a Harness skill needs: "
                    f"{KIND_MEANINGS}; {ask_kind}",
                )
            )
        # The kind goes in as the front matter's last line, so the rest keeps its layout;
        # without a valid one, a stand-in lets the other files still be checked now.
        lines = text.split("\n")
        inserted_at = body_line - 1
        given = kind if kind in SKILL_KINDS else SKILL_KINDS[0]
        text = "\n".join([*lines[: inserted_at - 1], f"kind: {given}", *lines[inserted_at - 1 :]])
    text, set_aside = _set_aside_host_tools(text, data, linemap, bundle_files)
    prefix = f"skills/{name}/"
    if any(p.startswith(prefix) for p in bundle_files):
        raise SkillImportError(
            [
                *problems,
                Problem(
                    "SKILL.md",
                    linemap.line(("name",)),
                    "name",
                    f"the bundle already has a skill {name} "
                    f"({prefix}); remove it first, or rename this "
                    "skill (its name: and folder)",
                ),
            ]
        )
    files = {
        prefix + rel: (text if rel == "SKILL.md" else content) for rel, content in source.items()
    }
    others = []
    for problem in validate_mapping({**bundle_files, **files}):
        if not problem.file.startswith(prefix):
            others.append(problem)
            continue
        rel = problem.file[len(prefix) :] or "."
        line = (
            problem.line - 1
            if rel == "SKILL.md" and inserted_at and problem.line > inserted_at
            else problem.line
        )
        problems.append(Problem(rel, line, problem.field, problem.message))
    if problems:
        raise SkillImportError(problems)
    return ImportedSkill(
        name=name,
        kind=kind or data["kind"],
        files=files,
        bundle_problems=others,
        set_aside_tools=set_aside,
    )


def _set_aside_host_tools(
    text: str, data: dict, linemap, bundle_files: dict[str, str]
) -> tuple[str, tuple[str, ...]]:
    """SKILL.md with ``allowed-tools`` names the bundle's tools.yaml lacks moved into a comment.

    In the public format ``allowed-tools`` names the host agent's tools (``Bash(git:*) Read``);
    here it names tools of tools.yaml, and validation refuses others. A one-line value keeps the
    names this Harness declares and ends with ``# set aside on import: ...``, so the line numbers
    and what the author wrote stay; a list over several lines is left for validation to report."""
    value = data.get("allowed-tools")
    tools, _ = parse_tools(bundle_files.get("tools.yaml", ""))
    if not isinstance(value, str) or tools is None:
        return text, ()
    names = value.split()
    kept = [n for n in names if n in tools.names]
    set_aside = tuple(n for n in names if n not in tools.names)
    lines = text.split("\n")
    at = linemap.line(("allowed-tools",)) - 1
    if not set_aside or not (0 <= at < len(lines)) or not lines[at].startswith("allowed-tools:"):
        return text, ()
    lines[at] = (
        f"allowed-tools: {' '.join(kept)!r}" if kept else "allowed-tools: ''"
    ) + f"  # set aside on import (host-agent tools, not in tools.yaml): {' '.join(set_aside)}"
    return "\n".join(lines), set_aside


def read_skill_dir(path: str | Path) -> tuple[dict[str, str], list[Problem]]:
    """The text files of a skill folder, and a problem for each file that cannot be imported.

    Bounded: at most ``MAX_SOURCE_ENTRIES`` entries are looked at and no file is
    read beyond ``MAX_FILE_BYTES``. Hidden files and ``__pycache__`` are skipped
    as :func:`harness.bundle.read_dir` skips them; links, executables and binaries
    are refused.
    """
    root = Path(path)
    if not root.is_dir():
        return {}, [
            Problem(
                str(path),
                0,
                "(folder)",
                "not a directory; give the skill folder, the one that holds SKILL.md",
            )
        ]
    files: dict[str, str] = {}
    problems: list[Problem] = []
    seen = 0
    pending = [root]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=lambda e: e.name)
        for entry in entries:
            if entry.name.startswith(".") or entry.name == "__pycache__":
                continue
            seen += 1
            if seen > MAX_SOURCE_ENTRIES:
                problems.append(
                    Problem(
                        ".",
                        0,
                        "(folder)",
                        f"more than {MAX_SOURCE_ENTRIES} files and folders; is this "
                        "one skill's folder?",
                    )
                )
                return files, problems
            rel = Path(entry.path).relative_to(root).as_posix()
            if entry.is_symlink():
                problems.append(link_problem(rel))
            elif entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif not entry.is_file(follow_symlinks=False):
                problems.append(Problem(rel, 0, "(file)", "not a plain file (a device or a pipe?)"))
            else:
                problem, text = _read_file(entry, rel)
                if problem is not None:
                    problems.append(problem)
                else:
                    files[rel] = text
    return files, problems


def _read_file(entry: os.DirEntry, rel: str) -> tuple[Problem | None, str]:
    mode = entry.stat(follow_symlinks=False).st_mode
    if mode & 0o111:
        return executable_problem(rel, mode), ""
    try:
        text = read_text(entry.path, what="skill file", max_bytes=MAX_FILE_BYTES)
    except InputFileError as error:
        return Problem(rel, 0, "(file)", error.reason), ""
    if "\x00" in text:
        return Problem(
            rel,
            0,
            "(file)",
            "holds NUL bytes (a binary file?); a Harness keeps only "
            "text files, and nothing in it runs",
        ), ""
    return None, text


# --- python -m harness import-skill ------------------------------------------------------


def cmd_import_skill(args) -> int:
    into, src = Path(args.into), Path(args.src)
    bundle_files, bundle_read = read_dir(into)
    source, problems = read_skill_dir(src)
    shown = [
        f"{src / p.file if p.file != '.' else src}:{p.line}: {p.field}: {p.message}"
        for p in problems
    ]
    shown += [f"{into / p.file}:{p.line}: {p.field}: {p.message}" for p in bundle_read]
    imported = None
    if not bundle_read and source:
        try:
            imported = skill_import(
                source,
                bundle_files=bundle_files,
                kind=args.kind,
                ask_kind="pass --kind reply or --kind strategy",
            )
        except SkillImportError as error:
            shown += [f"{src / p.file}:{p.line}: {p.field}: {p.message}" for p in error.problems]
        else:
            shown += [
                f"{into / p.file}:{p.line}: {p.field}: {p.message}"
                for p in imported.bundle_problems
            ]
    if shown or imported is None:
        for line in shown or [f"{src}: no files to import"]:
            print(line, file=sys.stderr)
        print(f"{len(shown) or 1} problem(s); nothing was written to {into}", file=sys.stderr)
        return 2
    skills_dir = into / "skills"
    staging = (
        skills_dir / f".import-{imported.name}-{uuid.uuid4().hex[:8]}"
    )  # hidden: never read as part of the bundle
    prefix = f"skills/{imported.name}/"
    try:
        dump_dir({p[len(prefix) :]: t for p, t in imported.files.items()}, staging)
        staging.rename(skills_dir / imported.name)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        print(
            f"{skills_dir / imported.name}: cannot write the skill ({exc.strerror}); "
            f"nothing was written to {into}",
            file=sys.stderr,
        )
        return 2
    print(f"imported {imported.name} ({imported.kind}) into {into}:")
    for path in sorted(imported.files):
        print(f"  {path}")
    if imported.file_hint():
        print(f"the agent reads a file with {imported.file_hint()}")
    if imported.tools_note():
        print(imported.tools_note())
    print(load_mapping({**bundle_files, **imported.files}).summary())
    return 0


def register(sub) -> None:
    p = sub.add_parser(
        "import-skill",
        help="add a public Agent Skills folder to a bundle directory as a skill",
        description="Add a public Agent Skills folder (SKILL.md, "
        "references/, assets/) to a Harness "
        "bundle as skills/<name>/. scripts/ and executable files are refused: "
        f"{NOT_CODE}. Nothing is written when anything is wrong.",
    )
    p.add_argument("src", metavar="SKILL_DIR", help="the skill folder, the one that holds SKILL.md")
    p.add_argument(
        "--into", required=True, metavar="BUNDLE_DIR", help="the bundle directory to add it to"
    )
    p.add_argument(
        "--kind",
        metavar="reply|strategy",
        help=f"the skill's kind when SKILL.md has none: {KIND_MEANINGS}",
    )
    p.set_defaults(func=cmd_import_skill)
