"""New names for renamed tools and skills: compositional, plausible, collision-free.

A name is split into words (``get_product_info_by_link_id`` -> get, product,
info, by, link, id); each word may be swapped for a synonym, filler words may
be dropped, a namespace prefix or suffix may be added, and the words are
joined in a drawn style (snake_case, camelCase or kebab-case where the format
allows it). The result is checked against the format's name pattern and
against every name that is taken, so a variant never swaps two names or
collides with a case's extra tools.
"""

from __future__ import annotations

import random
import re

from harness.skills import NAME_PATTERN
from harness.tools import TOOL_NAME_PATTERN

WORD_SYNONYMS: dict[str, tuple[str, ...]] = {
    "get": ("fetch", "lookup", "read", "query", "retrieve", "load", "find"),
    "search": ("find", "lookup", "query", "match", "scan"),
    "product": ("item", "goods", "listing", "sku", "merch", "article"),
    "products": ("items", "goods", "listings", "skus", "catalog"),
    "info": ("details", "data", "profile", "facts", "record", "card"),
    "link": ("slot", "listing", "link", "shelf"),
    "id": ("no", "number", "num", "ref"),
    "faq": ("help", "kb", "policy", "questions", "answers"),
    "room": ("live", "stream", "session", "channel", "studio"),
    "status": ("state", "overview", "snapshot", "summary"),
    "change": ("update", "set", "move", "reorder", "adjust"),
    "presentation": ("display", "showcase", "showing", "lineup", "stage"),
    "order": ("order", "sequence", "queue", "lineup", "rank"),
    "promotions": ("offers", "deals", "discounts", "coupons", "benefits"),
    "promotion": ("offer", "deal", "discount", "coupon", "benefit"),
    "campaign": ("marketing", "event", "campaign", "sale"),
    "conditions": ("rules", "terms", "requirements", "criteria"),
    "calculate": ("compute", "price", "quote", "estimate", "calc"),
    "optimal": ("best", "cheapest", "ideal", "lowest"),
    "load": ("open", "read", "activate", "use", "fetch"),
    "skill": ("skill", "playbook", "module", "guide", "procedure"),
    "stay": ("remain", "keep", "go"),
    "silent": ("quiet", "mute", "silent", "muted"),
    "item": ("product", "goods", "listing", "article"),
    "qa": ("answers", "questions", "qna", "faq", "help", "info"),
    "chillchat": ("casual_chat", "small_talk", "banter", "chitchat", "friendly_chat"),
    "aftersale": ("after_sales", "post_purchase", "order_support", "returns_help", "service"),
    "clarification": ("clarify", "follow_up", "ask_back", "disambiguate", "which_one"),
    "reply": ("answer", "response", "reply", "respond"),
    "refusal": ("decline", "refuse", "say_no", "boundary", "reject"),
    "thanks": ("thank_you", "gratitude", "appreciation", "thanking"),
    "greet": ("welcome", "hello", "greeting", "say_hi"),
    "tool": ("tool", "chain", "toolchain", "flow"),
    "strategy": ("plan", "strategy", "playbook", "steps", "route"),
    "benefit": ("pricing", "offers", "savings", "deals", "entitlement"),
    "compare": ("comparison", "versus", "contrast", "side_by_side"),
    "multi": ("batch", "many", "multiple", "group", "bulk"),
    "switch": ("reorder", "swap", "next_up", "rearrange"),
    "general": ("room", "global", "storewide", "overall", "sitewide"),
    "discount": ("deals", "offers", "savings", "promos", "sale"),
    "confirm": ("confirm", "ack", "announce"),
    "guide": ("guide", "help", "info"),
}
FILLERS = frozenset({"by", "the", "of", "for", "a", "to"})
TOOL_PREFIXES = ("", "", "", "shop_", "live_", "tool_", "api_", "room_")
TOOL_SUFFIXES = ("", "", "", "", "_tool", "_v2", "_api")
SKILL_PREFIXES = ("", "", "", "", "skill-", "live_", "s_", "avatar_")
SKILL_SUFFIXES = ("", "", "", "", "_skill", "-v2", "_mode")


def split_words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w.lower() for w in re.split(r"[_\-]+", spaced) if w]


def _join(words: list[str], style: str) -> str:
    words = [p for w in words for p in w.split("_")]
    if style == "camel":
        return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])
    if style == "kebab":
        return "-".join(words)
    return "_".join(words)


def new_name(
    old: str, *, rng: random.Random, kind: str, taken: set[str], attempts: int = 40
) -> str:
    """A fresh name for tool or skill ``old`` that is valid and not in ``taken``."""
    pattern = TOOL_NAME_PATTERN if kind == "tool" else NAME_PATTERN
    styles = ("snake", "snake", "camel") if kind == "tool" else ("snake", "snake", "kebab")
    prefixes = TOOL_PREFIXES if kind == "tool" else SKILL_PREFIXES
    suffixes = TOOL_SUFFIXES if kind == "tool" else SKILL_SUFFIXES
    words = split_words(old)
    for attempt in range(attempts):
        out = []
        for w in words:
            if w in FILLERS and rng.random() < 0.6:
                continue
            syns = WORD_SYNONYMS.get(w)
            out.append(rng.choice(syns) if syns and rng.random() < 0.75 else w)
        if not out:
            out = list(words)
        if rng.random() < 0.15 and len(out) > 2:
            out = out[:-1]  # a shorter name ("get_product_info_by_link" drops "id")
        name = _join(out, rng.choice(styles))
        prefix, suffix = rng.choice(prefixes), rng.choice(suffixes)
        if attempt > 5 or name == old:
            prefix = prefix or rng.choice(prefixes[3:])
        if attempt > 10:
            suffix = f"_{attempt}"
        candidate = prefix + name + suffix
        if kind == "tool":
            candidate = candidate.replace("-", "_")
        if candidate != old and candidate not in taken and re.match(pattern, candidate):
            return candidate
    raise ValueError(f"could not find a free name for '{old}' in {attempts} attempts")


_OPAQUE_HEADS = ("fn", "t", "op", "x", "k", "f", "q", "s", "z", "a")
_OPAQUE_CHARS = "abcdefghjkmnpqrstuvwxyz23456789"


def opaque_name(*, rng: random.Random, kind: str, taken: set[str], attempts: int = 40) -> str:
    """A name that carries no meaning (``fn_q7x``, ``t3``): the model can only learn what it does
    from the tool list or the skill list it is shown, never from its words."""
    pattern = TOOL_NAME_PATTERN if kind == "tool" else NAME_PATTERN
    for attempt in range(attempts):
        head = rng.choice(_OPAQUE_HEADS)
        body = "".join(rng.choice(_OPAQUE_CHARS) for _ in range(rng.randint(1, 3 + attempt // 10)))
        candidate = f"{head}_{body}" if rng.random() < 0.5 else f"{head}{body}"
        if candidate not in taken and re.match(pattern, candidate):
            return candidate
    raise ValueError(f"could not find a free opaque {kind} name in {attempts} attempts")


def make_opaque(
    renames: dict[str, str], *, share: float, rng: random.Random, kind: str, taken: set[str]
) -> dict[str, str]:
    """``renames`` with each new name replaced by an opaque one with probability ``share``.

    ``rng`` is the family's own opaque-name stream (``AugmentContext.rng("<family>:opaque")``), so a
    share of 0 draws nothing and leaves every variant byte-identical to one made without it."""
    if share <= 0:
        return renames
    out = dict(renames)
    for old in sorted(out):
        if rng.random() < share:
            out[old] = opaque_name(
                rng=rng, kind=kind, taken=taken | set(out.values()) | set(renames)
            )
    return out
