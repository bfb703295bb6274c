"""Shared state of one augmentation pass: the draft, randomness, envelope and record.

Each transformation family gets an :class:`AugmentContext` and edits its
draft. Randomness is derived per family from the seed (SHA-256 of
``"<seed>:<family>"``), so asking for more families never changes what one
family does, and no result depends on Python's per-process hash seed.
``rename`` carries a tool or skill rename into every place that names it.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from harness.augment.editable import Draft
from harness.augment.envelope import Envelope
from harness.augment.mapping import HarnessMapping
from harness.augment.names import make_opaque, new_name
from harness.augment.paraphrase import Rewriter, checked_rewrite
from harness.augment.references import rename_in_matcher, rename_in_text
from harness.augment.requirements import Requirements
from harness.hook_catalogue import HOOK_TYPES
from harness.tool_catalogue import BUILTIN_TOOLS


def derive_rng(seed: int, family: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}:{family}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass
class AugmentContext:
    draft: Draft
    seed: int
    envelope: Envelope
    requirements: Requirements
    mapping: HarnessMapping
    rewriter: Rewriter | None = None
    rejected_rewrites: list[str] = field(default_factory=list)
    taken: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.taken |= set(self.draft.origin.skills) | {t.name for t in self.draft.origin.tools}
        self.taken |= set(self.requirements.reserved_names)

    def rng(self, family: str) -> random.Random:
        return derive_rng(self.seed, family)

    def rewrite(self, text: str, rng: random.Random) -> str:
        """A checked paraphrase of ``text`` (the text itself when none keeps its constraints)."""
        result = checked_rewrite(text, rng=rng, names=self.draft.names(), rewriter=self.rewriter)
        self.rejected_rewrites += result.rejected
        return result.text

    def draw_renames(
        self, family: str, names: list[str], *, rng: random.Random, fallback: list[str]
    ) -> dict[str, str]:
        """New names for a family's ``names`` (``family`` "tools" or "skills"): each renamed with
        the envelope's ``rename_probability``; when none drew, one of ``fallback`` (every variant
        differs in every family it was asked for); then ``opaque_name_share`` of them opaque, from
        the family's own ``"<family>:opaque"`` stream."""
        env = getattr(self.envelope, family)
        kind = family.removesuffix("s")
        renames: dict[str, str] = {}
        for name in names:
            if rng.random() < env["rename_probability"]:
                renames[name] = new_name(
                    name, rng=rng, kind=kind, taken=self.taken | set(renames.values())
                )
        if not renames and fallback:
            name = rng.choice(fallback)
            renames[name] = new_name(name, rng=rng, kind=kind, taken=self.taken)
        return make_opaque(
            renames,
            share=env.get("opaque_name_share", 0.0),
            rng=self.rng(f"{family}:opaque"),
            kind=kind,
            taken=self.taken,
        )

    def current_skill(self, parent_name: str) -> str | None:
        """The draft's name now for a parent skill (None when masked)."""
        if parent_name in self.mapping.masked_skills:
            return None
        return self.mapping.skills.get(parent_name, parent_name)

    # -- renaming ------------------------------------------------------------------------------
    def rename(
        self, *, tools: dict[str, str] | None = None, skills: dict[str, str] | None = None
    ) -> None:
        """Rename tools and/or skills (current names) everywhere in the draft."""
        tools, skills = dict(tools or {}), dict(skills or {})
        if not tools and not skills:
            return
        renames = {**tools, **skills}
        d = self.draft
        before = d.tool_names()
        after = {n: tools.get(n, n) for n in before}
        for tool in d.tools["tools"]:
            tool["name"] = tools.get(tool["name"], tool["name"])
            tool["description"] = rename_in_text(tool["description"], renames)
        new_skills = {}
        for name, skill in d.skills.items():
            fm = skill.front_matter
            fm["name"] = skills.get(name, name)
            fm["description"] = rename_in_text(fm["description"], renames)
            if skill.allowed_tools:
                skill.set_allowed_tools([tools.get(t, t) for t in skill.allowed_tools])
            skill.body = rename_in_text(skill.body, renames)
            new_skills[fm["name"]] = skill
        d.skills = new_skills
        for block in d.prompt["blocks"]:
            block["template"] = rename_in_text(block["template"], renames)
            if "title" in block:
                block["title"] = rename_in_text(block["title"], renames)
        for hook in d.hooks["hooks"]:
            htype = HOOK_TYPES.get(hook["type"])
            params = hook.get("params") or {}
            for key, table in ((k, tools) for k in (htype.tool_params if htype else ())):
                params[key] = _rename_value(params.get(key), table)
            for key in htype.skill_params if htype else ():
                params[key] = _rename_value(params.get(key), skills)
            for key in list(params):
                if params[key] is None:
                    del params[key]
            if hook.get("matcher") and tools:
                hook["matcher"] = rename_in_matcher(
                    hook["matcher"], tools, before=before, after=after
                )
            on_fail = hook.get("on_fail") or {}
            for key in ("message", "fallback_reply"):
                if isinstance(on_fail.get(key), str):
                    on_fail[key] = rename_in_text(on_fail[key], renames)
            if isinstance(hook.get("description"), str):
                hook["description"] = rename_in_text(hook["description"], renames)
        retry = d.hooks.get("retry") or {}
        for key in ("fallback_reply", "message_prefix"):
            if isinstance(retry.get(key), str):
                retry[key] = rename_in_text(retry[key], renames)
        self._record(tools, self.mapping.tools)
        self._record(skills, self.mapping.skills)
        self.taken |= set(tools.values()) | set(skills.values())
        self.mapping.skill_arguments = skill_arguments(d)

    @staticmethod
    def _record(renames: dict[str, str], table: dict[str, str]) -> None:
        inverse = {v: k for k, v in table.items()}
        for current, new in renames.items():
            table[inverse.get(current, current)] = new
        for k in [k for k, v in table.items() if k == v]:
            del table[k]


def _rename_value(value, table: dict[str, str]):
    if isinstance(value, str):
        return table.get(value, value)
    if isinstance(value, list):
        return [table.get(v, v) if isinstance(v, str) else v for v in value]
    return value


def skill_arguments(draft: Draft) -> dict[str, str]:
    """Tool name -> the argument that holds a skill name, for tools that load skills."""
    out = {}
    for tool in draft.tools["tools"]:
        builtin = tool["binding"].get("builtin")
        if builtin not in BUILTIN_TOOLS or BUILTIN_TOOLS[builtin].role != "load_skill":
            continue
        props = (tool.get("parameters") or {}).get("properties") or {}
        required = (tool.get("parameters") or {}).get("required") or []
        arg = (
            "name"
            if "name" in props
            else next((p for p in required if (props.get(p) or {}).get("type") == "string"), None)
        )
        if arg:
            out[tool["name"]] = arg
    return out
