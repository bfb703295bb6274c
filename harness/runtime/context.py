"""Prompt assembly: the request context slots and the chat messages of a request.

Fills every context slot of ``harness.prompt.CONTEXT_SLOTS`` from the request,
the catalogue snapshot and the Harness (skill list, tool list), renders the
Harness's prompt pipeline into the system message, and formats the viewer
comments (one, or a numbered list in multi-comment mode) as the user message.
"""

from __future__ import annotations

import json
from typing import Any

from harness.bundle import Bundle
from harness.livestream import Catalogue, Product, Request, RoomState
from harness.prompt import CONTEXT_SLOTS

MAX_SPECS = 6


def _product_line(product: Product) -> str:
    specs = ", ".join(f"{k}: {v}" for k, v in list(product.specs.items())[:MAX_SPECS])
    stock = "sold out" if product.stock == 0 else f"stock {product.stock}"
    return (
        f"#{product.link_id} {product.name} ({product.category}): "
        f"{product.price:g} yuan, {stock}; {specs}"
    )


def products_in_play(request: Request, catalogue: Catalogue, room: RoomState) -> list[Product]:
    links = request.product_link_ids or room.shelf or catalogue.link_ids
    return [p for link in links if (p := catalogue.product(link)) is not None]


def _tool_line(tool: Any) -> str:
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    args = ", ".join(
        f"{name}{'' if name in required else '?'}: {spec.get('type', 'any')}"
        for name, spec in props.items()
    )
    return f"- {tool.name}({args}): {' '.join(tool.description.split())}"


def harness_slots(bundle: Bundle) -> dict[str, str]:
    """The context slots that come from the Harness alone (the same for every request)."""
    return {
        "skill_list": "\n".join(
            f"- {s.name} ({s.kind}): {' '.join(s.description.split())}"
            for s in bundle.skills.values()
        ),
        "tool_list": "\n".join(_tool_line(t) for t in bundle.tools),
    }


def context_slots(
    *,
    bundle: Bundle,
    request: Request,
    catalogue: Catalogue,
    room: RoomState,
    loaded_skills: list[str],
) -> dict[str, str]:
    """The value of every context slot for this request."""
    current = catalogue.product(room.current_link_id) if room.current_link_id else None
    shelf = room.shelf or catalogue.link_ids
    actions = [
        f"{a.user} {a.action.replace('_', ' ')}" + (f" link #{a.link_id}" if a.link_id else "")
        for a in room.viewer_actions[-8:]
    ]
    history = [f"{t.role}{' ' + t.user if t.user else ''}: {t.text}" for t in request.history[-8:]]
    slots = {
        "product_specs": "\n".join(
            _product_line(p) for p in products_in_play(request, catalogue, room)
        ),
        "current_product": f"link #{current.link_id} {current.name}" if current else "no product",
        "faq_entries": "\n".join(f"Q: {f.question} A: {f.answer}" for f in request.faq),
        "room_status": (
            f"presenting link #{room.current_link_id}; " if room.current_link_id else ""
        )
        + "shelf order: "
        + ", ".join(
            f"#{link} {p.name}" if (p := catalogue.product(link)) else f"#{link}" for link in shelf
        ),
        "viewer_actions": "; ".join(actions) or "none",
        "history": "\n".join(history) or "none",
        "anchor_utterances": " / ".join(request.anchor_utterances[-5:]) or "none",
        **harness_slots(bundle),
        "loaded_skills": ", ".join(loaded_skills) or "none",
    }
    assert set(slots) == set(CONTEXT_SLOTS), "every context slot of harness.prompt is filled"
    return slots


def system_prompt(bundle: Bundle, slots: dict[str, str]) -> str:
    parts = []
    for block, text in bundle.prompt.render(slots):
        parts.append(f"## {block.title}\n{text.strip()}")
    return "\n\n".join(parts)


def user_message(request: Request) -> str:
    if request.mode == "single":
        comment = request.comments[0]
        return f"Viewer {comment.user} says: {comment.text}"
    lines = [f"[{i + 1}] {c.user}: {c.text}" for i, c in enumerate(request.comments)]
    return "Several viewer comments to answer together in one reply:\n" + "\n".join(lines)


def grounding_text(request: Request, catalogue: Catalogue, room: RoomState) -> str:
    """The request context a reply's numbers may come from (tool results are added by the agent)."""
    parts = [c.text for c in request.comments]
    parts += [t.text for t in request.history] + list(request.anchor_utterances)
    parts += [f"{f.question} {f.answer}" for f in request.faq]
    parts += [f"#{link}" for link in (room.shelf or catalogue.link_ids)]
    if room.current_link_id:
        parts.append(str(room.current_link_id))
    return "\n".join(parts)


#: A result's text field that reaches the model as the Markdown it is, after the JSON line.
TEXT_FIELDS = ("instructions", "text")


def tool_payload(name: str, result: Any, error: str | None, note: str = "") -> str:
    """What the model reads back for one tool call (the Hermes/Qwen tool_response).

    One line of compact JSON (``{"name":...,"result":...}``, no spaces after separators); a loaded
    skill's body or a skill file (``instructions`` / ``text``) follows it as plain Markdown instead
    of a JSON string with escaped newlines and quotes. Measured with SmolLM2's tokenizer on
    ``examples/requests/product_price.json``: the product-info result 240 -> 207 tokens,
    ``item_qa``'s body 427 -> 381 (docs/runtime.md, "What the model reads back")."""
    content: dict[str, Any] = {"name": name}
    body = ""
    if error is not None:
        content["error"] = error
    else:
        if isinstance(result, dict):
            field = next((f for f in TEXT_FIELDS if isinstance(result.get(f), str)), None)
            if field is not None:
                body = result[field]
                result = {k: v for k, v in result.items() if k != field}
        content["result"] = result
    if note:
        content["note"] = note
    head = json.dumps(content, ensure_ascii=False, default=str, separators=(",", ":"))
    return "<tool_response>" + head + ("\n" + body if body else "") + "</tool_response>"
