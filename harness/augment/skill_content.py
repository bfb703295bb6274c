"""Family 2, skill content: paraphrase rules, mask non-essential rules, reorder rules.

Rules keep their ids (a rule without an explicit id gets its derived id
written out, so it survives its own rewrite). A rule is *essential*, and never
masked, when it names a tool or a skill, holds a number or a negation, or is
listed in the envelope's ``protected_rules``: those carry the constraints and
tool chains gold labels depend on. Reordering shuffles each run of adjacent
rules, never across headings.
"""

from __future__ import annotations

from harness.augment.context import AugmentContext
from harness.augment.editable import Body
from harness.augment.preserve import negation_count, numbers
from harness.augment.references import referenced


def is_essential(text: str, *, names: list[str], rule_id: str, protected: set[str]) -> bool:
    return (
        rule_id in protected
        or bool(numbers(text))
        or negation_count(text) > 0
        or bool(referenced(text, names))
    )


def apply_skill_content(ctx: AugmentContext) -> None:
    env = ctx.envelope.skill_content
    rng = ctx.rng("skill-content")
    d = ctx.draft
    names = d.names()
    protected = set(env["protected_rules"])
    inverse = {v: k for k, v in ctx.mapping.skills.items()}
    added = {a["name"] for a in ctx.mapping.added_skills}
    changed_any = False
    for name in sorted(d.skills):
        skill = d.skills[name]
        record_as = inverse.get(name, name)
        body = Body.parse(skill.body)
        rules = body.rules()
        if not rules:
            continue
        lo, hi = env["mask_fraction"]
        maskable = [
            r
            for r in rules
            if not is_essential(r.text, names=names, rule_id=r.id, protected=protected)
        ]
        count = min(
            round(rng.uniform(lo, hi) * len(rules)),
            len(maskable),
            len(rules) - env["min_rules_per_skill"],
        )
        masked = {r.id for r in rng.sample(maskable, max(count, 0))} if count > 0 else set()
        for run in body.runs():
            run[:] = [r for r in run if r.id not in masked]
        body.parts = [p for p in body.parts if not (isinstance(p, list) and not p)]
        rewritten = []
        for rule in body.rules():
            if rng.random() < env["paraphrase_probability"]:
                new = ctx.rewrite(rule.text, rng)
                if new != rule.text:
                    rule.text = new
                    rewritten.append(rule.id)
        reordered = False
        for run in body.runs():
            if len(run) > 1 and rng.random() < env["reorder_probability"]:
                before = [r.id for r in run]
                rng.shuffle(run)
                reordered |= before != [r.id for r in run]
        if not (masked or rewritten or reordered):
            continue
        skill.body = body.render()
        changed_any = True
        if record_as in added:
            continue
        if masked:
            ctx.mapping.masked_rules[record_as] = sorted(masked)
        if rewritten:
            ctx.mapping.rewritten_rules[record_as] = sorted(rewritten)
        if reordered:
            ctx.mapping.reordered_rules.append(record_as)
    if not changed_any:  # guarantee a change: rewrite one rule of the first parent skill
        for name in sorted(d.skills):
            body = Body.parse(d.skills[name].body)
            for rule in body.rules():
                new = ctx.rewrite(rule.text, rng)
                if new != rule.text:
                    rule.text = new
                    d.skills[name].body = body.render()
                    key = inverse.get(name, name)
                    ctx.mapping.rewritten_rules.setdefault(key, []).append(rule.id)
                    return
    ctx.mapping.reordered_rules.sort()
