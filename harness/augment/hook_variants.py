"""Family 5, hooks: retry behaviour, message wording and structure, hook-triggered edits.

* retry: ``max_retries`` and ``on_exhausted`` drawn from the envelope (never
  fewer retries than the case's gold trajectory used), a drawn
  ``message_prefix``, a paraphrased fallback reply;
* messages: each ``on_fail.message`` is paraphrased (placeholders such as
  ``{tool}`` are kept) and given one of several structures (plain, labelled
  "Problem / Fix", fix first, one line with a dash);
* hook-triggered edits: numeric params that decide when a hook fires and
  what it makes the model change (reply length, tool-call budget, input size,
  context budget) move within the envelope, never below what the gold needs;
  ``banned_phrases`` hooks may gain phrases the gold reply does not contain.
"""

from __future__ import annotations

import random
import re

from harness.augment.context import AugmentContext
from harness.hook_catalogue import HOOK_TYPES

STRUCTURES = ("plain", "labelled", "fix-first", "dash")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z{])")


def restructure(message: str, style: str) -> str:
    """The same sentences in another arrangement (placeholders untouched)."""
    parts = _SENTENCE.split(message.strip())
    if style == "plain" or len(parts) < 2:
        return message
    first, rest = parts[0], " ".join(parts[1:])
    if style == "labelled":
        return f"Problem: {first} Fix: {rest}"
    if style == "fix-first":
        return f"{rest} Reason: {first}"
    return f"{first.rstrip('.')} - {rest[:1].lower() + rest[1:] if rest[:1].isalpha() else rest}"


def _floors(ctx: AugmentContext) -> dict[str, int]:
    r = ctx.requirements
    # a variant's prompt may be longer than the recorded one (added skills, longer
    # paraphrases): the context budget keeps half as much again as headroom
    return {
        "max_length.max_chars": r.reply_chars,
        "max_tool_calls.max_calls": r.tool_calls,
        "input_validity.max_chars": r.input_chars,
        "context_budget.max_prompt_chars": int(r.prompt_chars * 1.5),
    }


def apply_hooks(ctx: AugmentContext) -> None:
    env = ctx.envelope.hooks
    rng = ctx.rng("hooks")
    d = ctx.draft
    retry = d.hooks.setdefault("retry", {})
    lo, hi = env["max_retries"]
    lo = max(lo, ctx.requirements.retries)
    old = {
        k: retry.get(k) for k in ("max_retries", "on_exhausted", "message_prefix", "fallback_reply")
    }
    if lo <= hi:
        retry["max_retries"] = rng.randint(lo, hi)
    retry["on_exhausted"] = rng.choice(env["on_exhausted"])
    retry["message_prefix"] = rng.choice(env["message_prefixes"])
    if retry.get("fallback_reply") and rng.random() < env["rewrite_message_probability"]:
        retry["fallback_reply"] = ctx.rewrite(retry["fallback_reply"], rng)
    for key, value in old.items():
        if retry.get(key) != value:
            ctx.mapping.retry[key] = [value, retry.get(key)]
    if not retry.get("message_prefix"):
        retry.pop("message_prefix")
    floors = _floors(ctx)
    for hook in d.hooks["hooks"]:
        _messages(ctx, hook, rng, env)
        _params(ctx, hook, rng, floors)
        if hook["type"] == "banned_phrases":
            _banned(ctx, hook, rng, env)
    if not (ctx.mapping.retry or ctx.mapping.hook_messages or ctx.mapping.hook_params):
        retry["max_retries"] = (retry.get("max_retries", 2) % 9) + 1
        ctx.mapping.retry["max_retries"] = [old["max_retries"], retry["max_retries"]]


def _messages(ctx: AugmentContext, hook: dict, rng: random.Random, env: dict) -> None:
    on_fail = hook.get("on_fail")
    message = (on_fail or {}).get("message")
    if not message or rng.random() >= env["rewrite_message_probability"]:
        return
    new = ctx.rewrite(message, rng)
    new = restructure(new, rng.choice(STRUCTURES))
    if new != message and len(new) <= 1000:
        on_fail["message"] = new
        ctx.mapping.hook_messages.append(hook["id"])


def _params(ctx: AugmentContext, hook: dict, rng: random.Random, floors: dict) -> None:
    htype = HOOK_TYPES.get(hook["type"])
    if htype is None:
        return
    params = hook.setdefault("params", {})
    for param, spec in sorted(htype.params.get("properties", {}).items()):
        if spec.get("type") not in ("integer", "number"):
            continue
        found = ctx.envelope.hook_param_range(hook["type"], param)
        if found is None:
            continue
        lo, hi = found
        lo = max(lo, floors.get(f"{hook['type']}.{param}", 0))
        if lo > hi:
            continue
        value = (
            rng.randint(int(lo), int(hi))
            if spec["type"] == "integer"
            else round(rng.uniform(lo, hi), 2)
        )
        if params.get(param) != value:
            ctx.mapping.hook_params.setdefault(hook["id"], {})[param] = [params.get(param), value]
            params[param] = value
    if not params:
        del hook["params"]


def _banned(ctx: AugmentContext, hook: dict, rng: random.Random, env: dict) -> None:
    lo, hi = env["extra_banned_phrases"]
    count = rng.randint(lo, hi)
    phrases = hook["params"].setdefault("phrases", [])
    texts = [t.lower() for t in ctx.requirements.texts]
    pool = [
        p
        for p in env["banned_phrase_pool"]
        if p not in phrases and not any(p.lower() in t for t in texts)
    ]
    extra = rng.sample(pool, min(count, len(pool)))
    if extra:
        ctx.mapping.hook_params.setdefault(hook["id"], {})["phrases"] = [
            list(phrases),
            phrases + extra,
        ]
        phrases += extra
