"""Family 1, skill identifiers: rename, rewrite descriptions, add and mask skills.

* rename: a new name per skill (folder and front matter), with every
  reference (rules, descriptions, hook params, prompt blocks) updated;
* rewrite descriptions: a checked paraphrase of each description;
* add: plausible synthetic skills and unrelated noise skills
  (:mod:`harness.augment.synthetic_skills`);
* mask: drop a share of the skills no gold label needs and nothing that stays
  refers to, keeping at least ``min_reply_skills`` reply skills.
"""

from __future__ import annotations

import random

from harness.augment.context import AugmentContext
from harness.augment.editable import SkillDraft
from harness.augment.references import referenced
from harness.augment.synthetic_skills import NOISE, PLAUSIBLE, render_template
from harness.hook_catalogue import HOOK_TYPES


def apply_skill_identifiers(ctx: AugmentContext) -> None:
    env = ctx.envelope.skills
    rng = ctx.rng("skills")
    _mask(ctx, rng)
    _add(ctx, rng, PLAUSIBLE, env["add_plausible"], "plausible")
    _add(ctx, rng, NOISE, env["add_noise"], "noise")
    d = ctx.draft
    renames = ctx.draw_renames("skills", list(d.skills), rng=rng, fallback=sorted(d.skills))
    added = {a["name"]: a for a in ctx.mapping.added_skills}
    parent_renames = {k: v for k, v in renames.items() if k not in added}
    ctx.rename(skills=parent_renames)
    for old, new in renames.items():  # added skills are recorded under their final name
        if old in added:
            added[old]["name"] = new
            d.skills = {(new if k == old else k): s for k, s in d.skills.items()}
            d.skills[new].front_matter["name"] = new
            ctx.taken.add(new)
    rewritten = []
    inverse = {v: k for k, v in ctx.mapping.skills.items()}
    for name, skill in d.skills.items():
        if rng.random() < env["rewrite_description_probability"]:
            new = ctx.rewrite(skill.front_matter["description"], rng)
            if new != skill.front_matter["description"]:
                skill.front_matter["description"] = new
                rewritten.append(inverse.get(name, name))
    if rewritten:
        ctx.mapping.rewritten_descriptions["skills"] = sorted(rewritten)


def _mask(ctx: AugmentContext, rng: random.Random) -> None:
    env = ctx.envelope.skills
    d = ctx.draft
    protected = {ctx.current_skill(s) for s in ctx.requirements.skills} - {None}
    for hook in d.hooks["hooks"]:
        htype = HOOK_TYPES.get(hook["type"])
        for key in htype.skill_params if htype else ():
            value = (hook.get("params") or {}).get(key)
            protected |= {value} if isinstance(value, str) else set(value or [])
    candidates = sorted(set(d.skills) - protected)
    lo, hi = env["mask_fraction"]
    count = round(rng.uniform(lo, hi) * len(candidates))
    rng.shuffle(candidates)
    masked = []
    for name in candidates:
        if len(masked) >= count:
            break
        if not _removable(ctx, name, env["min_reply_skills"]):
            continue
        del d.skills[name]
        masked.append(name)
    inverse = {v: k for k, v in ctx.mapping.skills.items()}
    ctx.mapping.masked_skills = sorted(
        set(ctx.mapping.masked_skills) | {inverse.get(n, n) for n in masked}
    )


def _removable(ctx: AugmentContext, name: str, min_reply: int) -> bool:
    d = ctx.draft
    skill = d.skills[name]
    if skill.kind == "reply" and sum(s.kind == "reply" for s in d.skills.values()) <= min_reply:
        return False
    names = [name]
    for other, s in d.skills.items():
        if other != name and referenced(s.front_matter["description"] + "\n" + s.body, names):
            return False
    texts = [b["template"] for b in d.prompt["blocks"]]
    for hook in d.hooks["hooks"]:
        texts.append(str((hook.get("on_fail") or {}).get("message", "")))
    return not any(referenced(t, names) for t in texts)


def _add(ctx: AugmentContext, rng: random.Random, pool, count_range, origin: str) -> None:
    d = ctx.draft
    lo, hi = count_range
    count = rng.randint(lo, hi)
    options = [t for t in pool if t.name not in ctx.taken]
    rng.shuffle(options)

    def tool_for(binding: str) -> str | None:
        tool = d.tool_by_binding(binding)
        return tool["name"] if tool else None

    for template in options[:count]:
        rendered = render_template(template, tool_for_binding=tool_for)
        if rendered is None:
            continue
        front, body = rendered
        d.skills[template.name] = SkillDraft(front, body, "")
        ctx.taken.add(template.name)
        ctx.mapping.added_skills.append(
            {"name": template.name, "kind": template.kind, "origin": origin}
        )
