"""A known defect planted in a Harness, so the evolution loop has something real to find.

``without_price_grounding`` removes the demo Harness's three guards on prices:
``item_qa``'s ``fetch-before-facts`` rule and the ``price-needs-tool`` and
``numbers-grounded`` hooks. A policy that then states prices from memory is
judged wrong, and the diagnosis should propose putting the grounding back. Used
by ``benchmarks/evolution_stage.py --plant-defect`` and by the evolution tests.
"""

from __future__ import annotations

from evaluation.diagnosis.edits import ChangeSkillRule, apply_edits

PRICE_HOOKS = ("price-needs-tool", "numbers-grounded")


def drop_hooks(hooks_yaml: str, hook_ids: tuple[str, ...]) -> str:
    """``hooks.yaml`` text without the listed hooks, keeping the rest of the file as written."""
    lines = hooks_yaml.split("\n")
    for hook_id in hook_ids:
        start = lines.index(f"  - id: {hook_id}")  # ValueError names a hook that is not there
        end = start + 1
        while end < len(lines) and not lines[end].startswith("  - id:"):
            end += 1
        lines = lines[:start] + lines[end:]
    return "\n".join(lines)


def without_price_grounding(files: dict[str, str]) -> dict[str, str]:
    """The bundle's files with the price grounding removed (the rule and both hooks)."""
    files, _ = apply_edits(
        files, [ChangeSkillRule(skill="item_qa", rule_id="fetch-before-facts", text="")]
    )
    return {**files, "hooks.yaml": drop_hooks(files["hooks.yaml"], PRICE_HOOKS)}
