"""The record of one Harness variant, and the remapping of cases and trajectories.

A :class:`HarnessMapping` says what a variant changed relative to its parent:
old -> new names of skills, tools and tool parameters, masked and added
skills, masked, rewritten and reordered rules, changed constraints, hook
parameters and retry policy. It is JSON (``to_dict`` / ``from_dict``), stored
beside every variant, and it turns the parent's gold labels and recorded
trajectories into the variant's: ``remap_case`` and ``remap_trajectory``.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from harness.augment.references import rename_in_text

MAPPING_FORMAT = "hsa-mapping/1"
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


class MappingError(ValueError):
    """A label cannot be carried into the variant (e.g. its skill was masked)."""


@dataclass
class HarnessMapping:
    """What a variant changed; old names are the parent's."""

    source_digest: str = ""
    variant_digest: str = ""
    seed: int | None = None
    dims: list[str] = field(default_factory=list)
    skills: dict[str, str] = field(default_factory=dict)  # renamed: old -> new
    tools: dict[str, str] = field(default_factory=dict)  # renamed: old -> new
    parameters: dict[str, dict[str, str]] = field(default_factory=dict)  # old tool -> old -> new
    masked_skills: list[str] = field(default_factory=list)
    added_skills: list[dict] = field(default_factory=list)  # {name, kind, origin}
    masked_rules: dict[str, list[str]] = field(default_factory=dict)  # old skill -> rule ids
    rewritten_rules: dict[str, list[str]] = field(default_factory=dict)
    reordered_rules: list[str] = field(default_factory=list)  # old skill names
    rewritten_descriptions: dict[str, list[str]] = field(default_factory=dict)  # skills/tools
    tool_order: list[str] = field(default_factory=list)  # new names, new order (if changed)
    block_order: list[str] = field(default_factory=list)  # block ids (if changed)
    reordered_block_items: list[str] = field(default_factory=list)
    rewritten_block_items: list[str] = field(default_factory=list)
    constraints: dict[str, list] = field(default_factory=dict)  # name -> [old, new]
    hook_params: dict[str, dict[str, list]] = field(default_factory=dict)  # id -> p -> [old, new]
    hook_messages: list[str] = field(default_factory=list)  # hook ids whose message changed
    retry: dict[str, list] = field(default_factory=dict)  # field -> [old, new]
    skill_arguments: dict[str, str] = field(default_factory=dict)  # new load tool -> its arg

    # -- names ---------------------------------------------------------------------------------
    def skill(self, old: str) -> str:
        """The variant's name for a parent skill; MappingError when it was masked."""
        if old in self.masked_skills:
            raise MappingError(f"skill '{old}' was masked in this variant")
        return self.skills.get(old, old)

    def tool(self, old: str) -> str:
        return self.tools.get(old, old)

    def argument(self, old_tool: str, old_arg: str) -> str:
        return self.parameters.get(old_tool, {}).get(old_arg, old_arg)

    def text(self, text: str) -> str:
        """Free text with references to renamed tools and skills updated."""
        return rename_in_text(text, {**self.skills, **self.tools})

    def is_identity(self) -> bool:
        return not (self.skills or self.tools or self.parameters or self.masked_skills)

    # -- labels --------------------------------------------------------------------------------
    def remap_call(self, name: str, arguments: dict | None) -> tuple[str, dict]:
        """A parent tool call (name, arguments) as the variant's call."""
        new_name = self.tool(name)
        args = {self.argument(name, k): v for k, v in (arguments or {}).items()}
        skill_arg = self.skill_arguments.get(new_name)
        if skill_arg and isinstance(args.get(skill_arg), str):
            args[skill_arg] = self.skill(args[skill_arg])
        return new_name, args

    def remap_case(self, case: dict) -> dict:
        """A copy of an evaluation case whose gold labels use the variant's names."""
        out = copy.deepcopy(case)
        gold = out.get("gold") or {}
        for key in ("reply_skills", "strategy_skills"):
            if key in gold:
                gold[key] = [self.skill(s) for s in gold[key]]
        for call in gold.get("tool_calls") or []:
            call["name"], args = self.remap_call(call["name"], call.get("arguments"))
            if "arguments" in call:
                call["arguments"] = args
        if "tool_order" in gold:
            gold["tool_order"] = [self.tool(t) for t in gold["tool_order"]]
        for item in out.get("constraints") or []:
            if item.get("kind") == "tool_order" and isinstance(item.get("value"), list):
                item["value"] = [self.tool(t) if isinstance(t, str) else t for t in item["value"]]
            if isinstance(item.get("text"), str):
                item["text"] = self.text(item["text"])
        return out

    def remap_trajectory(self, trajectory: dict) -> dict:
        """A copy of a recorded trajectory whose tool calls and skill loads use new names.

        Remapped: ``tool_calls``, ``skill_loads``, the tool calls written in each
        model call's ``text`` (text protocol) and ``native_tool_calls``, and the
        assistant/tool turns of recorded ``messages``. System prompts are not
        rewritten: the runtime renders them afresh from the variant.
        """
        out = copy.deepcopy(trajectory)
        for call in out.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                call["name"], call["arguments"] = self.remap_call(
                    call["name"], call.get("arguments")
                )
        loads = out.get("skill_loads")
        if isinstance(loads, list):
            out["skill_loads"] = [self._remap_load(x) for x in loads]
        for mc in out.get("model_calls") or []:
            if not isinstance(mc, dict):
                continue
            if isinstance(mc.get("text"), str):
                mc["text"] = self.remap_model_text(mc["text"])
            for call in mc.get("native_tool_calls") or []:
                call["name"], call["arguments"] = self.remap_call(
                    call["name"], call.get("arguments")
                )
            for msg in mc.get("messages") or []:
                self._remap_message(msg)
        for msg in out.get("messages") or []:
            self._remap_message(msg)
        return out

    def remap_model_text(self, text: str) -> str:
        """Model output with each ``<tool_call>{json}</tool_call>`` renamed."""

        def sub(m: re.Match) -> str:
            try:
                data = json.loads(m.group(1))
            except json.JSONDecodeError:
                return m.group(0)
            if not isinstance(data, dict) or not isinstance(data.get("name"), str):
                return m.group(0)
            args = data.get("arguments")
            name, new_args = self.remap_call(data["name"], args if isinstance(args, dict) else {})
            if name == data["name"] and (not isinstance(args, dict) or new_args == args):
                return m.group(0)
            data["name"] = name
            if isinstance(args, dict):
                data["arguments"] = new_args
            return "<tool_call>" + json.dumps(data, ensure_ascii=False) + "</tool_call>"

        return _TOOL_CALL.sub(sub, text)

    def _remap_load(self, item):
        if isinstance(item, str):
            return self.skill(item)
        if isinstance(item, dict):
            item = dict(item)
            for key in ("name", "skill"):
                if isinstance(item.get(key), str):
                    item[key] = self.skill(item[key])
        return item

    def _remap_message(self, msg: dict) -> None:
        if not isinstance(msg, dict):
            return
        if msg.get("role") == "assistant" and isinstance(msg.get("content"), str):
            msg["content"] = self.remap_model_text(msg["content"])
        if msg.get("role") == "tool" and isinstance(msg.get("name"), str):
            msg["name"] = self.tool(msg["name"])
        for call in msg.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                args = fn.get("arguments")
                parsed = (
                    json.loads(args) if isinstance(args, str) and args.strip() else (args or {})
                )
                fn["name"], new_args = self.remap_call(fn["name"], parsed)
                fn["arguments"] = (
                    json.dumps(new_args, ensure_ascii=False) if isinstance(args, str) else new_args
                )

    # -- composition and JSON ------------------------------------------------------------------
    def then(self, later: HarnessMapping) -> HarnessMapping:
        """This mapping followed by ``later`` (applied to this variant): parent -> final."""
        out = HarnessMapping.from_dict(self.to_dict())
        out.variant_digest = later.variant_digest
        out.dims = sorted(set(self.dims) | set(later.dims))
        for old in list(out.skills):
            out.skills[old] = later.skills.get(out.skills[old], out.skills[old])
        inverse = {v: k for k, v in self.skills.items()}
        for mid, new in later.skills.items():
            out.skills.setdefault(inverse.get(mid, mid), new)
        out.skills = {k: v for k, v in out.skills.items() if k != v}
        tool_inverse = {v: k for k, v in self.tools.items()}
        for old in list(out.tools):
            out.tools[old] = later.tools.get(out.tools[old], out.tools[old])
        for mid, new in later.tools.items():
            out.tools.setdefault(tool_inverse.get(mid, mid), new)
        out.tools = {k: v for k, v in out.tools.items() if k != v}
        for tool, params in later.parameters.items():
            old_tool = tool_inverse.get(tool, tool)
            out.parameters.setdefault(old_tool, {}).update(params)
        added = {a["name"] for a in self.added_skills}
        for mid in later.masked_skills:
            old = inverse.get(mid, mid)
            if old in added:
                out.added_skills = [a for a in out.added_skills if a["name"] != old]
            else:
                out.masked_skills.append(old)
        out.masked_skills = sorted(set(out.masked_skills))
        out.added_skills = [
            {**a, "name": later.skills.get(a["name"], a["name"])} for a in out.added_skills
        ] + later.added_skills
        for attr in ("masked_rules", "rewritten_rules", "hook_params", "rewritten_descriptions"):
            merged = getattr(out, attr)
            for key, value in getattr(later, attr).items():
                key = inverse.get(key, key) if attr.endswith("rules") else key
                if isinstance(value, list):
                    merged[key] = sorted(set(merged.get(key, [])) | set(value))
                else:
                    merged.setdefault(key, {}).update(value)
        for attr in (
            "reordered_rules",
            "hook_messages",
            "reordered_block_items",
            "rewritten_block_items",
        ):
            setattr(out, attr, sorted(set(getattr(out, attr)) | set(getattr(later, attr))))
        for attr in ("constraints", "retry"):
            merged = getattr(out, attr)
            for key, (old, new) in getattr(later, attr).items():
                merged[key] = [merged[key][0] if key in merged else old, new]
        out.tool_order = later.tool_order or [later.tools.get(t, t) for t in out.tool_order]
        out.block_order = later.block_order or out.block_order
        out.skill_arguments = later.skill_arguments or {
            later.tools.get(t, t): a for t, a in out.skill_arguments.items()
        }
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"format": MAPPING_FORMAT, **asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False, indent=1) + "\n"

    @classmethod
    def from_dict(cls, data: dict) -> HarnessMapping:
        data = dict(data)
        fmt = data.pop("format", MAPPING_FORMAT)
        if fmt != MAPPING_FORMAT:
            raise MappingError(f"format: expected {MAPPING_FORMAT!r}, got {fmt!r}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise MappingError(
                f"unknown mapping field(s) {', '.join(unknown)}; known: " + ", ".join(sorted(known))
            )
        return cls(**copy.deepcopy(data))
