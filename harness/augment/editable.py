"""An editable copy of a bundle's parsed data, and its re-rendering to files.

Augmentation edits plain data (the YAML of ``tools.yaml``, ``prompt.yaml``,
``hooks.yaml``, each skill's front matter and body; read by ``harness.yamlio``,
the one reader) and renders text the way the Harness format writes it
(``harness.yamlio.dump_yaml``'s settings and ``harness.text_edit.render_skill``'s
layout; multi-line strings as ``|`` blocks so templates stay readable in diffs).
A file whose data did not change keeps its original text byte for byte, so a
variant that only touched hooks differs from its parent in ``hooks.yaml`` alone.
``Body`` splits a SKILL.md body into text lines and rule items (read by
``harness.text_edit.scan_rules``, the one rule reader) so rules can be
rewritten, masked and reordered by id.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import yaml

from harness.bundle import Bundle
from harness.text_edit import render_skill, scan_rules, split_front_matter
from harness.yamlio import yaml_data


def _represent_str(dumper, data: str):
    # Multi-line text (prompt templates, long messages) as a literal block, as people write it.
    return dumper.represent_scalar(
        "tag:yaml.org,2002:str", data, style="|" if "\n" in data.rstrip("\n") else None
    )


class BlockDumper(yaml.SafeDumper):
    """The Harness writer's settings, with multi-line strings as ``|`` blocks."""


BlockDumper.add_representer(str, _represent_str)
if hasattr(yaml, "CSafeDumper"):

    class _CBlockDumper(yaml.CSafeDumper):
        pass

    _CBlockDumper.add_representer(str, _represent_str)
    _DUMPER = _CBlockDumper
else:  # pragma: no cover - PyYAML without libyaml
    _DUMPER = BlockDumper


def dump_text(data, *, dumper=None) -> str:
    """YAML as ``harness.yamlio.dump_yaml`` writes it (key order kept, block style, width
    100), but multi-line strings as ``|`` blocks; through libyaml when it is installed (a
    test checks both emitters give the same text)."""
    return yaml.dump(
        data,
        Dumper=dumper or _DUMPER,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


@dataclass
class RuleItem:
    """One top-level list item of a skill body."""

    marker: str
    text: str
    id: str

    def render(self) -> str:
        return f"{self.marker} {self.text} {{#{self.id}}}"


@dataclass
class Body:
    """A skill body as lines of text and runs of rules (a run: adjacent rule items)."""

    parts: list = field(default_factory=list)  # str (a text line) | list[RuleItem] (a run)

    @classmethod
    def parse(cls, body: str) -> Body:
        lines = body.split("\n")
        rules = {span.start: span for span in scan_rules(body)}
        parts: list = []
        run: list[RuleItem] | None = None
        i = 0
        while i < len(lines):
            span = rules.get(i)
            if span is not None:
                if run is None:
                    run = []
                    parts.append(run)
                run.append(RuleItem(span.marker, span.text, span.id))
                i = span.end
                continue
            if lines[i].strip() or run is None:  # blank lines inside a list keep the run open
                run = None
                parts.append(lines[i])
            i += 1
        return cls(parts)

    def runs(self) -> list[list[RuleItem]]:
        return [p for p in self.parts if isinstance(p, list)]

    def rules(self) -> list[RuleItem]:
        return [r for run in self.runs() for r in run]

    def render(self) -> str:
        lines: list[str] = []
        for i, part in enumerate(self.parts):
            if isinstance(part, list):
                lines += [r.render() for r in part]
                nxt = self.parts[i + 1] if i + 1 < len(self.parts) else None
                if isinstance(nxt, str) and nxt.strip():
                    lines.append("")
            else:
                lines.append(part)
        return "\n".join(lines)


@dataclass
class SkillDraft:
    front_matter: dict
    body: str
    path: str  # where the skill came from ("" for an added skill)

    @property
    def name(self) -> str:
        return self.front_matter["name"]

    @property
    def kind(self) -> str:
        return self.front_matter["kind"]

    @property
    def allowed_tools(self) -> list[str]:
        tools = self.front_matter.get("allowed-tools") or []
        return tools.split() if isinstance(tools, str) else list(tools)

    def set_allowed_tools(self, tools: list[str]) -> None:
        if isinstance(self.front_matter.get("allowed-tools"), str):
            self.front_matter["allowed-tools"] = " ".join(tools)
        else:
            self.front_matter["allowed-tools"] = list(tools)


@dataclass
class _Parsed:
    manifest: dict
    tools: dict
    prompt: dict
    hooks: dict
    skills: dict[str, SkillDraft]


_CACHE: dict[str, _Parsed] = {}


def _parse(bundle: Bundle) -> _Parsed:
    cached = _CACHE.get(bundle.digest)
    if cached is None:
        skills = {}
        for name, skill in bundle.skills.items():
            fm_text, body, _line, _p = split_front_matter(bundle.files[skill.path], file=skill.path)
            front_matter = yaml_data(fm_text, file=skill.path, line_offset=1)
            skills[name] = SkillDraft(front_matter, body, skill.path)
        cached = _Parsed(
            *(
                yaml_data(bundle.files[file], file=file)
                for file in ("manifest.yaml", "tools.yaml", "prompt.yaml", "hooks.yaml")
            ),
            skills,
        )
        if len(_CACHE) > 64:
            _CACHE.clear()
        _CACHE[bundle.digest] = cached
    return cached


class Draft:
    """Parsed, editable data of one bundle; ``render()`` gives the variant's files."""

    def __init__(self, bundle: Bundle) -> None:
        parsed = _parse(bundle)
        self.origin = bundle
        self._parsed = parsed
        self.manifest = copy.deepcopy(parsed.manifest)
        self.tools = copy.deepcopy(parsed.tools)
        self.prompt = copy.deepcopy(parsed.prompt)
        self.hooks = copy.deepcopy(parsed.hooks)
        self.skills: dict[str, SkillDraft] = copy.deepcopy(parsed.skills)

    # -- lookups ------------------------------------------------------------------------------
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.tools["tools"]]

    def tool_by_binding(self, binding: str) -> dict | None:
        kind, _, target = binding.partition(":")
        for tool in self.tools["tools"]:
            if tool["binding"].get(kind) == target:
                return tool
        return None

    def names(self) -> list[str]:
        """Every tool and skill name (what a paraphrase must keep)."""
        return sorted(set(self.tool_names()) | set(self.skills))

    # -- output -------------------------------------------------------------------------------
    def render(self) -> dict[str, str]:
        files = {p: t for p, t in self.origin.files.items() if not p.startswith("skills/")}
        for key, file in (
            ("manifest", "manifest.yaml"),
            ("tools", "tools.yaml"),
            ("prompt", "prompt.yaml"),
            ("hooks", "hooks.yaml"),
        ):
            data = getattr(self, key)
            if data != getattr(self._parsed, key):
                files[file] = dump_text(data)
        for name, skill in self.skills.items():
            original = self._parsed.skills.get(name)
            if (
                original is not None
                and skill.path == original.path
                and skill.front_matter == original.front_matter
                and skill.body == original.body
            ):
                files[skill.path] = self.origin.files[skill.path]
            else:
                files[f"skills/{name}/SKILL.md"] = render_skill(
                    skill.front_matter, skill.body, dump=dump_text
                )
            if skill.path:  # a skill's inert files (references/, assets/) move with it when renamed
                folder = skill.path.rpartition("/")[0] + "/"
                for path, text in self.origin.files.items():
                    if path.startswith(folder) and path != skill.path:
                        files[f"skills/{name}/{path[len(folder) :]}"] = text
        return files
