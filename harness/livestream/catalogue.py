"""The product catalogue of a live room: products by link id, promotions, FAQ, campaigns.

A catalogue is a JSON document (see docs/runtime.md) that the built-in tools and
the MCP marketing server read as a snapshot. ``Catalogue.from_dict`` validates
the whole document and reports every problem with its field path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.livestream.promotions import CartItem, Promotion, PromotionError
from harness.livestream.validation import DocumentValidationError, FieldReader
from harness.numbers import decimal_int
from harness.userfiles import read_json


@dataclass(frozen=True)
class FaqEntry:
    """A configured question/answer pair, optionally tied to one product."""

    id: str
    question: str
    answer: str
    link_id: int | None = None
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "question": self.question, "answer": self.answer}
        if self.link_id is not None:
            data["link_id"] = self.link_id
        if self.tags:
            data["tags"] = list(self.tags)
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> FaqEntry | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(data, path, {"id", "question", "answer", "link_id", "tags"})
        entry_id = reader.string(data, "id", path)
        question = reader.string(data, "question", path)
        answer = reader.string(data, "answer", path)
        link_id = reader.integer(data, "link_id", path, required=False, minimum=1)
        tags = [t for t in reader.listing(data, "tags", path) if isinstance(t, str)]
        if len(reader.problems) > before:
            return None
        return cls(entry_id, question, answer, link_id, tuple(tags))


@dataclass(frozen=True)
class Product:
    """One product on sale, addressed in the room by its link id (#1, #2, ...)."""

    link_id: int
    product_id: str
    name: str
    category: str
    price: float
    specs: dict[str, Any] = field(default_factory=dict)
    stock: int = 0
    promotion_ids: tuple[str, ...] = ()
    faq: tuple[FaqEntry, ...] = ()
    description: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "link_id": self.link_id,
            "product_id": self.product_id,
            "name": self.name,
            "category": self.category,
            "price": self.price,
            "specs": dict(self.specs),
            "stock": self.stock,
        }
        if self.description:
            data["description"] = self.description
        if self.promotion_ids:
            data["promotions"] = list(self.promotion_ids)
        if self.faq:
            data["faq"] = [f.to_dict() for f in self.faq]
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> Product | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(
            data,
            path,
            {
                "link_id",
                "product_id",
                "name",
                "category",
                "price",
                "specs",
                "stock",
                "promotions",
                "faq",
                "description",
            },
        )
        link_id = reader.integer(data, "link_id", path, minimum=1)
        product_id = reader.string(data, "product_id", path)
        name = reader.string(data, "name", path)
        category = reader.string(data, "category", path)
        price = reader.number(data, "price", path, minimum=0)
        specs = data.get("specs", {})
        if not isinstance(specs, dict):
            reader.problem(f"{path}.specs", "must be a JSON object of spec name -> value")
            specs = {}
        stock = reader.integer(data, "stock", path, required=False, default=0, minimum=0)
        promo_ids = []
        for i, pid in enumerate(reader.listing(data, "promotions", path)):
            if not isinstance(pid, str) or not pid:
                reader.problem(f"{path}.promotions[{i}]", "must be a promotion id (string)")
            else:
                promo_ids.append(pid)
        faq = [
            FaqEntry.read(reader, f, f"{path}.faq[{i}]")
            for i, f in enumerate(reader.listing(data, "faq", path))
        ]
        description = reader.string(data, "description", path, required=False)
        if len(reader.problems) > before:
            return None
        faq_entries = tuple(
            f if f.link_id is not None else FaqEntry(f.id, f.question, f.answer, link_id, f.tags)
            for f in faq
            if f is not None
        )
        return cls(
            link_id=link_id,
            product_id=product_id,
            name=name,
            category=category,
            price=float(price),
            specs=dict(specs),
            stock=stock or 0,
            promotion_ids=tuple(promo_ids),
            faq=faq_entries,
            description=description,
        )


@dataclass(frozen=True)
class Campaign:
    """A marketing campaign: its conditions in words and the promotions it runs."""

    id: str
    name: str
    conditions: tuple[str, ...] = ()
    promotion_ids: tuple[str, ...] = ()
    starts: str = ""
    ends: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "conditions": list(self.conditions),
            "promotion_ids": list(self.promotion_ids),
        }
        if self.starts:
            data["starts"] = self.starts
        if self.ends:
            data["ends"] = self.ends
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> Campaign | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(
            data, path, {"id", "name", "conditions", "promotion_ids", "starts", "ends"}
        )
        cid = reader.string(data, "id", path)
        name = reader.string(data, "name", path)
        conditions = [c for c in reader.listing(data, "conditions", path) if isinstance(c, str)]
        promo_ids = [p for p in reader.listing(data, "promotion_ids", path) if isinstance(p, str)]
        starts = reader.string(data, "starts", path, required=False)
        ends = reader.string(data, "ends", path, required=False)
        if len(reader.problems) > before:
            return None
        return cls(cid, name, tuple(conditions), tuple(promo_ids), starts, ends)


_WORD = re.compile(r"[\w\u4e00-\u9fff]+")


def _tokens(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


@dataclass
class Catalogue:
    """All products of a room with their promotions, FAQ and campaigns."""

    products: list[Product] = field(default_factory=list)
    promotions: list[Promotion] = field(default_factory=list)
    faq: list[FaqEntry] = field(default_factory=list)
    campaigns: list[Campaign] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_link = {p.link_id: p for p in self.products}
        self._promos = {p.id: p for p in self.promotions}

    # --- lookups ---------------------------------------------------------------
    def product(self, link_id: int) -> Product | None:
        return self._by_link.get(link_id)

    def promotion(self, promotion_id: str) -> Promotion | None:
        return self._promos.get(promotion_id)

    @property
    def link_ids(self) -> list[int]:
        return sorted(self._by_link)

    def promotions_for(self, link_id: int) -> list[Promotion]:
        """Rules that can touch this product: its own plus room-wide ones."""
        product = self.product(link_id)
        own = set(product.promotion_ids) if product else set()
        return [
            p
            for p in self.promotions
            if p.id in own or (not p.link_ids and p.kind != "coupon") or link_id in p.link_ids
        ]

    def all_faq(self) -> list[FaqEntry]:
        entries = list(self.faq)
        for product in self.products:
            entries.extend(product.faq)
        return entries

    def search(self, query: str, *, limit: int = 5, category: str | None = None) -> list[Product]:
        """Products ranked by word overlap of the query with name, category, specs."""
        want = _tokens(query)
        scored = []
        for product in self.products:
            if category and product.category.lower() != category.lower():
                continue
            hay = _tokens(
                " ".join(
                    [
                        product.name,
                        product.category,
                        product.description,
                        " ".join(f"{k} {v}" for k, v in product.specs.items()),
                    ]
                )
            )
            score = len(want & hay)
            if product.name.lower() in query.lower():
                score += 3
            if score or not want:
                scored.append((score, product.link_id, product))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [p for _, _, p in scored[:limit]]

    def search_faq(
        self, query: str, *, link_id: int | None = None, limit: int = 3
    ) -> list[FaqEntry]:
        """FAQ entries ranked by word overlap with the question (product ones first)."""
        want = _tokens(query)
        scored = []
        for entry in self.all_faq():
            if link_id is not None and entry.link_id not in (None, link_id):
                continue
            score = len(want & _tokens(entry.question + " " + " ".join(entry.tags)))
            if score:
                bonus = 0.5 if (link_id is not None and entry.link_id == link_id) else 0
                scored.append((score + bonus, entry.id, entry))
        scored.sort(key=lambda t: (-t[0], t[1]))
        return [e for _, _, e in scored[:limit]]

    def cart(self, items: list[dict[str, Any]]) -> list[CartItem]:
        """Turn ``[{link_id, quantity}]`` into priced cart items, checking links and stock."""
        cart = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "link_id" not in item:
                raise PromotionError(f"items[{i}] must be an object with link_id and quantity")
            link_id = item["link_id"]
            quantity = item.get("quantity", 1)
            if isinstance(link_id, str):
                link_id = decimal_int(link_id.strip().lstrip("#"), max_digits=12) or link_id
            product = self.product(link_id) if isinstance(link_id, int) else None
            if product is None:
                raise PromotionError(
                    f"items[{i}].link_id: no product with link id {link_id!r}; "
                    f"links on sale: {self.link_ids}"
                )
            if not isinstance(quantity, int) or isinstance(quantity, bool) or quantity < 1:
                raise PromotionError(
                    f"items[{i}].quantity must be an integer >= 1, got {quantity!r}"
                )
            if quantity > product.stock:
                raise PromotionError(f"items[{i}]: only {product.stock} of link {link_id} in stock")
            cart.append(CartItem(product.link_id, product.name, product.price, quantity))
        return cart

    # --- JSON ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "products": [p.to_dict() for p in self.products],
            "promotions": [p.to_dict() for p in self.promotions],
            "faq": [f.to_dict() for f in self.faq],
            "campaigns": [c.to_dict() for c in self.campaigns],
        }

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(
            json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )

    @classmethod
    def load(cls, path: str | Path) -> Catalogue:
        """Read and validate a catalogue file: ``InputFileError`` when it is not readable JSON,
        ``DocumentValidationError`` listing every bad field."""
        return cls.from_dict(read_json(path, what="catalogue file"), source=str(path))

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "catalogue") -> Catalogue:
        reader = FieldReader()
        catalogue = cls.read(reader, data, "")
        if reader.problems or catalogue is None:
            raise DocumentValidationError(reader.problems, source=source)
        return catalogue

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> Catalogue | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(data, path, {"products", "promotions", "faq", "campaigns"})
        products = [
            Product.read(reader, p, f"{reader.join(path, 'products')}[{i}]")
            for i, p in enumerate(reader.listing(data, "products", path, required=True))
        ]
        promotions = [
            Promotion.read(reader, p, f"{reader.join(path, 'promotions')}[{i}]")
            for i, p in enumerate(reader.listing(data, "promotions", path))
        ]
        faq = [
            FaqEntry.read(reader, f, f"{reader.join(path, 'faq')}[{i}]")
            for i, f in enumerate(reader.listing(data, "faq", path))
        ]
        campaigns = [
            Campaign.read(reader, c, f"{reader.join(path, 'campaigns')}[{i}]")
            for i, c in enumerate(reader.listing(data, "campaigns", path))
        ]
        seen: dict[int, int] = {}
        for i, product in enumerate(products):
            if product is None:
                continue
            if product.link_id in seen:
                reader.problem(
                    f"{reader.join(path, 'products')}[{i}].link_id",
                    f"link id {product.link_id} already used by products[{seen[product.link_id]}]",
                )
            seen[product.link_id] = i
        promo_ids = {p.id for p in promotions if p is not None}
        for i, product in enumerate(products):
            for j, pid in enumerate(product.promotion_ids if product else ()):
                if pid not in promo_ids:
                    reader.problem(
                        f"{reader.join(path, 'products')}[{i}].promotions[{j}]",
                        f"unknown promotion {pid!r}; defined: "
                        f"{', '.join(sorted(promo_ids)) or 'none'}",
                    )
        for i, promo in enumerate(promotions):
            for j, link in enumerate(promo.link_ids if promo else ()):
                if link not in seen:
                    reader.problem(
                        f"{reader.join(path, 'promotions')}[{i}].link_ids[{j}]",
                        f"no product with link id {link}",
                    )
        if len(reader.problems) > before:
            return None
        return cls(
            products=[p for p in products if p],
            promotions=[p for p in promotions if p],
            faq=[f for f in faq if f],
            campaigns=[c for c in campaigns if c],
        )
