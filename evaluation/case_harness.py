"""Per-case Harness changes for the T3 sets: extra tools with canned results, active instructions.

A Tool Robustness case brings tools the Harness does not have; a Prompt
Robustness case brings instructions. ``bundle_for_case`` returns the base
bundle with those added (tools appended to ``tools.yaml``, instructions as a
prompt block right after the persona), validated like any user edit.

A case with ``harness_variant`` ({seed, dims}: the compatibility set,
``evaluation/compatibility.py``) runs under an HSA variant of whatever Harness is being evaluated,
made with that seed and those families while protecting the case's gold skills and limits, and is
judged on its gold remapped to the variant's names (``harness_variant_of``), as the Harness-Variant
set does with fixed bundles.

Extra tools answer with the canned ``result`` the case gives. The tool format
only binds tools to built-ins or MCP servers, so an extra tool is declared
with a placeholder built-in binding and ``CannedToolRunner`` answers it before
the built-in is reached; every other tool runs as usual.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from harness import Bundle, load_mapping
from harness.yamlio import yaml_data

PLACEHOLDER_BUILTIN = "livestream.get_room_status"
INSTRUCTIONS_BLOCK = "active_instructions"


def bundle_for_case(base: Bundle, case: dict) -> Bundle:
    """The base bundle, or a copy with the case's extra tools and instructions added."""
    extra = case.get("extra_tools") or []
    constraints = [c for c in case.get("constraints") or [] if c.get("kind") != "tool_order"]
    order = [c for c in case.get("constraints") or [] if c.get("kind") == "tool_order"]
    if not extra and not constraints and not order:
        return base
    files = dict(base.to_mapping())
    if extra:
        tools = yaml_data(files["tools.yaml"], file="tools.yaml")
        known = {t["name"] for t in tools["tools"]}
        for tool in extra:
            if tool["name"] in known:
                continue
            tools["tools"].append(
                {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                    "binding": {"builtin": PLACEHOLDER_BUILTIN},
                }
            )
        files["tools.yaml"] = yaml.safe_dump(tools, sort_keys=False, allow_unicode=True)
    if constraints or order:
        prompt = yaml_data(files["prompt.yaml"], file="prompt.yaml")
        lines = [
            f"- {c['text']}".replace("{", "{{").replace("}", "}}") for c in constraints + order
        ]
        block = {
            "id": INSTRUCTIONS_BLOCK,
            "title": "Active instructions for this stream",
            "template": "Follow these instructions in every reply:\n" + "\n".join(lines) + "\n",
        }
        blocks = [b for b in prompt["blocks"] if b.get("id") != INSTRUCTIONS_BLOCK]
        blocks.insert(1 if blocks else 0, block)
        prompt["blocks"] = blocks
        files["prompt.yaml"] = yaml.safe_dump(prompt, sort_keys=False, allow_unicode=True)
    return load_mapping(files, source=f"case {case.get('id')}")


def harness_variant_of(base: Bundle, case: dict) -> tuple[Bundle, dict]:
    """(the Harness the case runs under, the case as judged there): ``base`` and the case itself, or
    for a case with ``harness_variant`` the HSA variant of ``base`` and the case with its gold
    remapped."""
    spec = case.get("harness_variant")
    if not spec:
        return base, case
    from harness.augment import augment_bundle, requirements_from_case

    load_tools = tuple(t.name for t in base.tool_registry.by_role("load_skill"))
    variant = augment_bundle(
        bundle=base,
        seed=int(spec["seed"]),
        dims=spec["dims"],
        requirements=requirements_from_case(case, load_tools=load_tools),
    )
    return variant.bundle, variant.mapping.remap_case(case)


def canned_results(case: dict) -> dict[str, Any]:
    return {t["name"]: t.get("result", {}) for t in case.get("extra_tools") or []}


class CannedToolRunner:
    """Wraps the runtime's ToolRunner: canned tools answer from the case, others run normally."""

    def __init__(self, inner: Any, canned: dict[str, Any]) -> None:
        self.inner = inner
        self.canned = canned

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, spec, arguments, ctx, *, injected=None, timeout_s=None):
        if spec.name not in self.canned:
            return self.inner.run(spec, arguments, ctx, injected=injected, timeout_s=timeout_s)
        from harness.runtime.tool_runner import ToolOutcome

        if injected == "permission_denied":
            return ToolOutcome(
                error=f"permission denied: this room may not call {spec.name}",
                error_kind="permission_denied",
                injected=injected,
            )
        return ToolOutcome(result=json.loads(json.dumps(self.canned[spec.name])), injected=injected)
