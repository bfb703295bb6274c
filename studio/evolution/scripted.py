"""A deterministic "shortcut" policy script for a case set: the test double of a sloppy model.

For every case the script loads the gold reply skill, calls the gold tools and
gives the reference reply, except that where the reference states a price it
first tries a shortcut: a price from memory, stated without any tool call and
wrong. A Harness whose hooks demand a tool before a price claim blocks the
shortcut and the script goes on to the tools and the grounded reply; a Harness
without that check lets the wrong price through, and the judges score it 0 on
Accuracy. So the policy is fixed while the Harness decides the score, which is
what an evolution stage needs to show in tests and in the demo without a model.
Written as a ``ScriptedPolicy`` file (request id -> outputs), it runs in the
worker through the ordinary ``scripted:FILE`` endpoint route.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SEARCH_TOOLS = ("search_products", "search_faq")
_MONEY = re.compile(r"(\d+(?:\.\d+)?)(\s*yuan)", re.IGNORECASE)


def _call(name: str, arguments: dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _wrong_price(reply: str) -> str | None:
    match = _MONEY.search(reply)
    if match is None:
        return None
    wrong = round(float(match.group(1)) * 1.37 + 3)
    return reply[: match.start(1)] + str(wrong) + reply[match.end(1) :]


def case_script(case: dict[str, Any]) -> list[str]:
    """The outputs the shortcut policy gives for one case."""
    gold = case.get("gold") or {}
    if gold.get("route") == "silent":
        return [_call("stay_silent", {"reason": "spam or off-topic"})]
    skills = list(gold.get("reply_skills") or [])[:1] + list(gold.get("strategy_skills") or [])
    loads = "".join(_call("load_skill", {"name": s}) for s in skills)
    comment = next(
        (c.get("text", "") if isinstance(c, dict) else str(c) for c in case.get("comments") or []),
        "",
    )
    calls = []
    for call in gold.get("tool_calls") or []:
        if call.get("optional"):
            continue
        arguments = dict(call.get("arguments") or {})
        if call["name"] in SEARCH_TOOLS and "query" not in arguments:
            arguments["query"] = comment  # gold arguments are constraints; a search needs its query
        calls.append(_call(call["name"], arguments))
    tools = "".join(calls)
    reply = gold.get("reference_reply") or "Thanks for the comment!"
    shortcut = _wrong_price(reply) if tools else None
    if shortcut:
        return [loads, shortcut, tools, reply] if loads else [shortcut, tools, reply]
    first = loads + tools
    return [first, reply] if first else [reply]


def write_script(*, cases: list[dict[str, Any]], path: str | Path) -> Path:
    """Write the ScriptedPolicy file (request id -> outputs) for ``cases``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    script = {case["id"]: case_script(case) for case in cases}
    path.write_text(json.dumps(script, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return path
