"""Family 4, the system prompt: reorder blocks and list items, perturb constraints.

Blocks are permuted except the envelope's ``pinned_blocks``, which keep their
position. Inside a block's template each run of ``- `` list items may be
shuffled and single items paraphrased (slots such as ``{max_reply_chars}``
are masked, so they survive). Numeric constraints are drawn from the
envelope's ranges, never below what the case's gold needs (its reply length
and the rounds its trajectory uses).
"""

from __future__ import annotations

import re

from harness.augment.context import AugmentContext
from harness.prompt import CONSTRAINTS

_ITEM = re.compile(r"^(\s*[-*] )(.*)$")


def _item_runs(lines: list[str]) -> list[list[int]]:
    runs, current = [], []
    for i, line in enumerate(lines):
        if _ITEM.match(line):
            current.append(i)
        else:
            if len(current) > 1:
                runs.append(current)
            current = []
    if len(current) > 1:
        runs.append(current)
    return runs


def apply_prompt(ctx: AugmentContext) -> None:
    env = ctx.envelope.prompt
    rng = ctx.rng("prompt")
    d = ctx.draft
    blocks = d.prompt["blocks"]
    before = [b["id"] for b in blocks]
    if env["reorder_blocks"]:
        pinned = set(env["pinned_blocks"])
        free = [b for b in blocks if b["id"] not in pinned]
        rng.shuffle(free)
        it = iter(free)
        d.prompt["blocks"] = blocks = [b if b["id"] in pinned else next(it) for b in blocks]
    if [b["id"] for b in blocks] != before:
        ctx.mapping.block_order = [b["id"] for b in blocks]
    for block in blocks:
        lines = block["template"].split("\n")
        reordered = rewritten = False
        for run in _item_runs(lines):
            if rng.random() < env["reorder_items_probability"]:
                items = [lines[i] for i in run]
                rng.shuffle(items)
                reordered |= items != [lines[i] for i in run]
                for i, item in zip(run, items, strict=True):
                    lines[i] = item
        for i, line in enumerate(lines):
            m = _ITEM.match(line)
            if m and rng.random() < env["paraphrase_items_probability"]:
                new = ctx.rewrite(m.group(2), rng)
                if new != m.group(2):
                    lines[i] = m.group(1) + new
                    rewritten = True
        if reordered or rewritten:
            block["template"] = "\n".join(lines)
            if reordered:
                ctx.mapping.reordered_block_items.append(block["id"])
            if rewritten:
                ctx.mapping.rewritten_block_items.append(block["id"])
    constraints = d.prompt["constraints"]
    floors = {
        "max_reply_chars": ctx.requirements.reply_chars,
        "max_rounds": ctx.requirements.rounds,
    }
    for name in sorted(constraints):
        rng_range = ctx.envelope.constraint_range(name)
        if rng_range is None or name not in CONSTRAINTS:
            continue
        kind = CONSTRAINTS[name][0]
        lo, hi = rng_range
        lo = max(lo, floors.get(name, 0))
        if lo > hi:
            continue  # the gold needs more than the envelope allows: leave it as it is
        value = rng.randint(int(lo), int(hi)) if kind is int else round(rng.uniform(lo, hi), 1)
        if value != constraints[name]:
            ctx.mapping.constraints[name] = [constraints[name], value]
            constraints[name] = value
