"""Implementations of the built-in tools named in ``harness.tool_catalogue``.

Each implementation is a plain function ``(ctx, arguments) -> JSON-able dict``
over a ``ToolContext``: the catalogue snapshot of the request, a private copy
of the room state (so ``change_presentation_order`` changes only this
request's view) and the Harness's skills. A user-caused problem (unknown link,
missing argument) raises ``ToolInputError`` with a message that says what would
be valid; the runtime turns it into the tool's error in the trajectory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.livestream import Catalogue, Product, Request, RoomState
from harness.numbers import decimal_int
from harness.tool_catalogue import BUILTIN_TOOLS


class ToolInputError(ValueError):
    """Arguments that the tool cannot serve (unknown link id, missing query ...)."""


@dataclass
class ToolContext:
    catalogue: Catalogue
    room: RoomState
    request: Request
    skills: dict[str, Any]  # name -> harness.skills.Skill
    changes: list[dict[str, Any]] = field(default_factory=list)


BuiltinFn = Callable[[ToolContext, dict[str, Any]], dict[str, Any]]
BUILTIN_IMPLS: dict[str, BuiltinFn] = {}


def builtin(name: str) -> Callable[[BuiltinFn], BuiltinFn]:
    if name not in BUILTIN_TOOLS:
        raise KeyError(f"{name} is not in harness.tool_catalogue.BUILTIN_TOOLS")

    def register(fn: BuiltinFn) -> BuiltinFn:
        BUILTIN_IMPLS[name] = fn
        return fn

    return register


def _link_id(args: dict[str, Any], key: str = "link_id") -> int:
    value = args.get(key)
    if isinstance(value, str):
        value = decimal_int(value.strip().lstrip("#"), max_digits=12) or value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolInputError(f"'{key}' must be a link number (integer >= 1), got {value!r}")
    return value


def _product(ctx: ToolContext, link_id: int) -> Product:
    product = ctx.catalogue.product(link_id)
    if product is None:
        shelf = ctx.room.shelf or ctx.catalogue.link_ids
        raise ToolInputError(f"no product at link {link_id}; links on the shelf: {shelf}")
    return product


def _promotion_summary(ctx: ToolContext, link_id: int) -> list[dict[str, Any]]:
    return [
        {"id": p.id, "title": p.title, "rule": p.describe()}
        for p in ctx.catalogue.promotions_for(link_id)
    ]


def _query(args: dict[str, Any]) -> str:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolInputError("'query' must be a non-empty string")
    return query


@builtin("livestream.get_product_info")
def get_product_info(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    link_id = _link_id(args)
    product = _product(ctx, link_id)
    return {
        "link_id": product.link_id,
        "name": product.name,
        "category": product.category,
        "price": product.price,
        "currency": "yuan",
        "stock": product.stock,
        "in_stock": product.stock > 0,
        "specs": dict(product.specs),
        "description": product.description,
        "promotions": _promotion_summary(ctx, link_id),
        "on_shelf": not ctx.room.shelf or link_id in ctx.room.shelf,
    }


@builtin("livestream.search_products")
def search_products(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    limit = args.get("max_results", 5)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
        raise ToolInputError(f"'max_results' must be an integer 1-50, got {limit!r}")
    hits = ctx.catalogue.search(_query(args), limit=limit)
    return {
        "results": [
            {
                "link_id": p.link_id,
                "name": p.name,
                "category": p.category,
                "price": p.price,
                "stock": p.stock,
            }
            for p in hits
        ],
        "count": len(hits),
    }


@builtin("livestream.search_faq")
def search_faq(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    link_id = _link_id(args) if args.get("link_id") is not None else None
    entries = ctx.catalogue.search_faq(_query(args), link_id=link_id)
    seen = {e.id for e in entries}
    extra = [e for e in ctx.request.faq if e.id not in seen]
    return {"entries": [e.to_dict() for e in [*entries, *extra][:5]]}


@builtin("livestream.get_room_status")
def get_room_status(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    shelf = ctx.room.shelf or ctx.catalogue.link_ids
    current = ctx.room.current_link_id
    return {
        "current_link_id": current,
        "current_product": ctx.catalogue.product(current).name
        if current and ctx.catalogue.product(current)
        else None,
        "shelf": [
            {"link_id": link, "name": p.name if (p := ctx.catalogue.product(link)) else "?"}
            for link in shelf
        ],
        "viewer_actions": [a.to_dict() for a in ctx.room.viewer_actions[-10:]],
    }


@builtin("livestream.change_presentation_order")
def change_presentation_order(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    link_id = _link_id(args)
    _product(ctx, link_id)
    position = args.get("position", 1)
    if isinstance(position, bool) or not isinstance(position, int) or position < 1:
        raise ToolInputError(
            f"'position' must be an integer >= 1 (1 = present next), got {position!r}"
        )
    shelf = list(ctx.room.shelf or ctx.catalogue.link_ids)
    if link_id not in shelf:
        raise ToolInputError(f"link {link_id} is not on the shelf {shelf}")
    if link_id == ctx.room.current_link_id:
        raise ToolInputError(f"link {link_id} is being presented right now")
    queue = [link for link in shelf if link != ctx.room.current_link_id and link != link_id]
    position = min(position, len(queue) + 1)
    queue.insert(position - 1, link_id)
    if ctx.room.current_link_id in shelf:
        queue.insert(0, ctx.room.current_link_id)
    ctx.room.shelf = queue
    ctx.changes.append({"change": "presentation_order", "link_id": link_id, "position": position})
    upcoming = [link for link in queue if link != ctx.room.current_link_id]
    return {
        "link_id": link_id,
        "position": position,
        "presentation_order": upcoming,
        "message": f"link {link_id} will be presented at position {position}",
    }


@builtin("livestream.get_room_promotions")
def get_room_promotions(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    room_wide = [p for p in ctx.catalogue.promotions if not p.link_ids]
    return {
        "promotions": [
            {"id": p.id, "kind": p.kind, "title": p.title, "rule": p.describe()} for p in room_wide
        ],
        "campaigns": [
            {"id": c.id, "name": c.name, "ends": c.ends} for c in ctx.catalogue.campaigns
        ],
    }


def skill_name_argument(args: dict[str, Any]) -> str | None:
    for key in ("name", "skill", "skill_name"):
        if isinstance(args.get(key), str):
            return args[key]
    strings = [v for v in args.values() if isinstance(v, str)]
    return strings[0] if len(strings) == 1 else None


@builtin("flow.load_skill")
def load_skill(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """A skill's body, or one of its inert files when the name is ``<skill>/<path>``.

    The file form keeps every bundle's ``load_skill`` schema (a single ``name``)
    valid, and it is the relative path the skill's own text uses
    (``references/tone.md``). A file comes back as text, as it was validated: it
    is never run or parsed.
    """
    name = skill_name_argument(args)
    if not name:
        raise ToolInputError('give the skill\'s name, e.g. {"name": "item_qa"}')
    skill_name, _, file = name.strip().partition("/")
    skill = ctx.skills.get(skill_name)
    if skill is None:
        raise ToolInputError(
            f"unknown skill {skill_name!r}; skills: {', '.join(sorted(ctx.skills))}"
        )
    if file:
        if file not in skill.files:
            listed = ", ".join(f"{skill.name}/{p}" for p in skill.files) or "none"
            raise ToolInputError(f"skill {skill.name!r} has no file {file!r}; its files: {listed}")
        return {"skill": skill.name, "file": file, "text": skill.files[file]}
    result = {"skill": skill.name, "kind": skill.kind, "instructions": skill.render_body()}
    if skill.files:
        result["files"] = list(skill.files)
        result["load_a_file"] = f'load_skill {{"name": "{skill.name}/<file>"}}'
    return result


@builtin("flow.stay_silent")
def stay_silent(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    reason = args.get("reason") or ""
    return {"silent": True, "reason": str(reason)[:300]}


def missing_builtins() -> list[str]:
    """Catalogue entries without an implementation (a test keeps this empty)."""
    return sorted(set(BUILTIN_TOOLS) - set(BUILTIN_IMPLS))
