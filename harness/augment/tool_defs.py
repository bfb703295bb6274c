"""Family 3, tool definitions: rename tools, rewrite descriptions, reorder the registry.

A renamed tool keeps its binding (the built-in or MCP tool it runs), its
parameter names and JSON Schema, so its function and argument semantics are
unchanged; only what the model reads changes. Every reference follows the
rename (skills' allowed-tools and rules, hook params and matchers, prompt
blocks, other descriptions). Parameter names are kept because built-in and
MCP implementations receive arguments by name; the mapping still has a
``parameters`` table so a runtime with argument aliases can use it.
"""

from __future__ import annotations

from harness.augment.context import AugmentContext


def apply_tools(ctx: AugmentContext) -> None:
    """Rename tools and rewrite tool and parameter descriptions within ``ctx.envelope.tools``."""
    env = ctx.envelope.tools
    rng = ctx.rng("tools")
    d = ctx.draft
    names = d.tool_names()
    renames = ctx.draw_renames("tools", names, rng=rng, fallback=names)
    ctx.rename(tools=renames)
    rewritten = []
    inverse = {v: k for k, v in ctx.mapping.tools.items()}
    for tool in d.tools["tools"]:
        if rng.random() < env["rewrite_description_probability"]:
            new = ctx.rewrite(tool["description"], rng)
            if new != tool["description"]:
                tool["description"] = new
                rewritten.append(inverse.get(tool["name"], tool["name"]))
        props = (tool.get("parameters") or {}).get("properties") or {}
        for _param, spec in sorted(props.items()):
            if (
                isinstance(spec, dict)
                and isinstance(spec.get("description"), str)
                and rng.random() < env["rewrite_parameter_description_probability"]
            ):
                spec["description"] = ctx.rewrite(spec["description"], rng)
    if rewritten:
        ctx.mapping.rewritten_descriptions["tools"] = sorted(rewritten)
    if env["reorder"] and len(d.tools["tools"]) > 1:
        order = list(d.tools["tools"])
        rng.shuffle(order)
        if order != d.tools["tools"]:
            d.tools["tools"] = order
            ctx.mapping.tool_order = [t["name"] for t in order]
