"""What makes a case a Tool Robustness or Prompt Robustness case (docs/architecture.md §6, T3).

Tool Robustness: each case brings extra tools the Harness has never shown the
model: distractors that look useful but are wrong for the request (a legacy
lookup with stale prices, a competitor-price tool, a web search ...) and, for
some cases, an *unseen* tool that is the only way to answer. Each extra tool
carries the canned ``result`` the runtime returns when it is called.
Rubrics: ACQ, RC, TC.

Prompt Robustness: each case activates one or two instructions (length limit,
fixed opening or closing phrase, a word never to use, a required mention, a
required tool-call order). Rubrics: ACQ, FI, TCO.
"""

from __future__ import annotations

import random
import re
from typing import Any

from evaluation.world import names as N
from evaluation.world import phrasing as W
from evaluation.world.intents import Draft
from harness.livestream.catalogue import Catalogue

_LINK = {
    "type": "object",
    "properties": {"link_id": {"type": "integer", "minimum": 1}},
    "required": ["link_id"],
    "additionalProperties": False,
}
_QUERY = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}


def _distractors(rng: random.Random, price: float) -> list[dict[str, Any]]:
    stale = round(price * rng.choice((1.2, 1.3, 1.5)) + 0.9, 0)
    return [
        {
            "name": "get_product_info_legacy",
            "description": "Deprecated product lookup from last season's catalogue export.",
            "parameters": _LINK,
            "result": {"price": stale, "note": "cached 2025-01-01"},
            "distractor": True,
        },
        {
            "name": "get_competitor_price",
            "description": "Price of similar products in other shops.",
            "parameters": _LINK,
            "result": {"competitor_price": round(price * 0.8, 0)},
            "distractor": True,
        },
        {
            "name": "search_web",
            "description": "Search the public web.",
            "parameters": _QUERY,
            "result": {"results": ["forum post: prices vary"]},
            "distractor": True,
        },
        {
            "name": "translate_text",
            "description": "Translate a text into another language.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}, "target": {"type": "string"}},
                "required": ["text", "target"],
                "additionalProperties": False,
            },
            "result": {"text": "..."},
            "distractor": True,
        },
        {
            "name": "send_private_message",
            "description": "Send a private message to a viewer.",
            "parameters": {
                "type": "object",
                "properties": {"user": {"type": "string"}, "text": {"type": "string"}},
                "required": ["user", "text"],
                "additionalProperties": False,
            },
            "result": {"sent": True},
            "distractor": True,
        },
        {
            "name": "get_weather",
            "description": "Weather forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
            "result": {"forecast": "sunny"},
            "distractor": True,
        },
        {
            "name": "get_order_status_admin",
            "description": "Internal order database (staff only).",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
            "result": {"error": "permission denied"},
            "distractor": True,
        },
        {
            "name": "get_product_info_by_sku",
            "description": "Warehouse record by SKU code (not link number).",
            "parameters": {
                "type": "object",
                "properties": {"sku": {"type": "string"}},
                "required": ["sku"],
                "additionalProperties": False,
            },
            "result": {"warehouse": "WH-3", "price": stale},
            "distractor": True,
        },
    ]


def _unseen(rng: random.Random, link_id: int) -> tuple[dict, str, dict, str]:
    """(tool spec with canned result, comment core, required fact, reference reply)."""
    kind = rng.choice(("eta", "rating", "gift", "warranty_card"))
    if kind == "eta":
        days = rng.choice((2, 3, 4, 5))
        tool = {
            "name": "get_shipping_eta",
            "description": "Estimated delivery time in days for a product by link number.",
            "parameters": _LINK,
            "result": {"link_id": link_id, "eta_days": days, "courier": "SF Express"},
        }
        cores = (
            "how long will #{n} take to arrive",
            "when would #{n} get to me",
            "delivery time for link {n}",
        )
        fact = {
            "id": f"eta#{link_id}",
            "kind": "text",
            "text": f"arrives in {days} days",
            "any_of": [f"{days} day"],
        }
        ref = f"Link #{link_id} usually arrives in {days} days by SF Express."
    elif kind == "rating":
        rating = rng.choice((4.5, 4.6, 4.7, 4.8, 4.9))
        reviews = rng.randint(120, 9000)
        tool = {
            "name": "get_product_rating",
            "description": "Average buyer rating and review count by link number.",
            "parameters": _LINK,
            "result": {"link_id": link_id, "rating": rating, "reviews": reviews},
        }
        cores = (
            "what's the rating of #{n}",
            "are reviews good for link {n}",
            "how do buyers rate #{n}",
        )
        fact = {
            "id": f"rating#{link_id}",
            "kind": "text",
            "text": f"rated {rating}",
            "any_of": [str(rating)],
        }
        ref = f"Buyers rate link #{link_id} {rating} stars from {reviews} reviews."
    elif kind == "gift":
        fee = rng.choice((3, 5, 8))
        tool = {
            "name": "check_gift_wrap",
            "description": "Whether gift wrapping is offered for a product, and its fee.",
            "parameters": _LINK,
            "result": {"link_id": link_id, "available": True, "fee_yuan": fee},
        }
        cores = (
            "can #{n} be gift wrapped",
            "gift wrap for link {n} possible",
            "do you wrap #{n} as a present",
        )
        fact = {
            "id": f"gift#{link_id}",
            "kind": "price",
            "text": f"gift wrap costs {fee} yuan",
            "value": float(fee),
            "any_of": [str(fee)],
        }
        ref = f"Yes, link #{link_id} can be gift wrapped for {fee} yuan."
    else:
        months = rng.choice((12, 18, 24))
        tool = {
            "name": "get_extended_warranty",
            "description": "Extended warranty plans offered for a product.",
            "parameters": _LINK,
            "result": {"link_id": link_id, "extended_months": months, "price_yuan": 29},
        }
        cores = (
            "is there extended warranty for #{n}",
            "can I extend the warranty of link {n}",
            "warranty plan for #{n}",
        )
        fact = {
            "id": f"warranty#{link_id}",
            "kind": "text",
            "text": f"extends to {months} months",
            "any_of": [f"{months} month"],
        }
        ref = f"Yes, link #{link_id} can get an extended warranty of {months} months."
    tool["distractor"] = False
    core = rng.choice(cores).format(n=link_id)
    return tool, core, fact, ref


def add_extra_tools(*, rng: random.Random, case: dict, draft: Draft, catalogue: Catalogue) -> None:
    price = draft.focus[0].price if draft.focus else 99.0
    tools = rng.sample(_distractors(rng, price), k=rng.choice((2, 3, 4)))
    if draft.focus and case["mode"] == "single" and rng.random() < 0.3:
        link_id = draft.focus[0].link_id
        tool, core, fact, ref = _unseen(rng, link_id)
        case["comments"][0]["text"] = W.style(
            rng, W.pick(rng, W.OPENERS), core, W.pick(rng, W.TAILS)
        )
        case["gold"].update(
            reply_skills=[N.ITEM_QA],
            strategy_skills=[],
            required_facts=[fact],
            reference_reply=ref,
            tool_calls=[{"name": tool["name"], "arguments": {"link_id": link_id}}],
            tool_order=[],
        )
        case["tags"] = ["unseen_tool"]
        tools.insert(rng.randrange(len(tools) + 1), tool)
    case["extra_tools"] = tools
    case["gold"]["rubrics"] = ["ACQ", "RC", "TC"]


CONSTRAINTS = (
    ("max_chars", "Keep every reply under {v} characters.", (80, 100, 120)),
    (
        "end_with",
        "End every reply with the phrase '{v}'",
        ("Happy shopping!", "See you in the cart!", "Thanks for watching!"),
    ),
    ("start_with", "Start every reply with '{v}'", ("Hi dear!", "Mia here:", "Hello hello!")),
    ("must_mention", "Mention the shop name '{v}' in every reply.", ("Bright Basket",)),
    ("forbid_word", "Never use the word '{v}'.", ("cheap", "amazing", "honestly", "super")),
    ("no_exclamation", "Do not use exclamation marks.", (None,)),
    (
        "mention_link_id",
        "Whenever you talk about a product, state its link number as '#N'.",
        (None,),
    ),
    ("tool_order", "Always call get_room_status before any other tool.", (None,)),
)


def add_constraints(*, rng: random.Random, case: dict, draft: Draft) -> None:
    chosen = rng.sample(CONSTRAINTS, k=rng.choice((1, 1, 2)))
    if not draft.focus:
        chosen = [c for c in chosen if c[0] != "mention_link_id"] or [CONSTRAINTS[1]]
    if case["gold"]["route"] == "silent":
        chosen = [c for c in chosen if c[0] != "tool_order"] or [CONSTRAINTS[1]]
    items = []
    for kind, text, values in chosen:
        value = rng.choice(values)
        item: dict[str, Any] = {"id": kind, "kind": kind, "text": text.format(v=value)}
        if value is not None:
            item["value"] = value
        items.append(item)
    phrases = [i["value"] for i in items if i["kind"] in ("start_with", "end_with")]
    if any("!" in p for p in phrases):  # a phrase with "!" cannot meet "no exclamation marks"
        items = [i for i in items if i["kind"] != "no_exclamation"]
    by_kind = {i["kind"]: i for i in items}
    # the reference reply follows every instruction: body edits first, then the mention,
    # then the opening and closing phrases
    ref = case["gold"]["reference_reply"]
    if "mention_link_id" in by_kind:
        ref = re.sub(r"\b(?:[Ll]ink|[Nn]umber) #?(\d+)", r"#\1", ref)
    if "no_exclamation" in by_kind:
        ref = ref.replace("!", ".")
    if "must_mention" in by_kind:
        ref = f"{ref.rstrip()} {by_kind['must_mention']['value']} has it."
    if "start_with" in by_kind:
        ref = f"{by_kind['start_with']['value']} {ref}"
    if "end_with" in by_kind:
        ref = f"{ref.rstrip()} {by_kind['end_with']['value']}"
    if "max_chars" in by_kind:  # keep the reference itself within the limit
        by_kind["max_chars"]["value"] = max(
            by_kind["max_chars"]["value"], -(-(len(ref) + 5) // 10) * 10
        )
        by_kind["max_chars"]["text"] = (
            f"Keep every reply under {by_kind['max_chars']['value']} characters."
        )
    if "tool_order" in by_kind:
        first = [c for c in case["gold"]["tool_calls"] if not c.get("optional")]
        case["gold"]["tool_calls"] = [
            {"name": N.ROOM_STATUS, "arguments": {}},
            *case["gold"]["tool_calls"],
        ]
        case["gold"]["tool_order"] = [N.ROOM_STATUS] + ([first[0]["name"]] if first else [])
    case["constraints"] = items
    if case["gold"]["route"] != "silent":
        case["gold"]["reference_reply"] = ref
    case["gold"]["rubrics"] = ["ACQ", "FI", "TCO"]
