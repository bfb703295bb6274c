"""Promotion rules of a live room and the arithmetic that prices a cart under them.

Four rule kinds, as operators configure them on a campaign:

- ``percentage``: P% off the listed products (``link_ids``; empty = every product);
- ``multi_buy``: buy at least N of one product, get P% off that line;
- ``threshold``: spend at least X (after product discounts) and save Y; with
  ``repeat`` the saving applies once per full X ("every 200 save 20"), capped
  by ``max_discount`` when given;
- ``coupon``: a code worth Y off once the cart reaches ``min_spend``.

Stacking follows the usual platform order: the best single product-level rule
per line, then the best threshold rule on the cart, then at most one coupon.
All money is computed in ``Decimal`` and reported rounded to cents.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from harness.livestream.validation import FieldReader

PROMOTION_KINDS = ("percentage", "multi_buy", "threshold", "coupon")
CENT = Decimal("0.01")


def money(value: Decimal | float | int) -> float:
    """Round to cents and return a float for JSON."""
    return float(Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP))


@dataclass(frozen=True)
class Promotion:
    """One promotion rule; which fields matter depends on ``kind``."""

    id: str
    kind: str
    title: str
    link_ids: tuple[int, ...] = ()  # empty: applies room-wide
    percent_off: float = 0.0  # percentage, multi_buy
    min_quantity: int = 0  # multi_buy
    threshold: float = 0.0  # threshold
    discount: float = 0.0  # threshold, coupon
    repeat: bool = False  # threshold: once per full threshold
    max_discount: float | None = None  # threshold with repeat
    code: str = ""  # coupon
    min_spend: float = 0.0  # coupon
    campaign_id: str = ""

    def applies_to(self, link_id: int) -> bool:
        return not self.link_ids or link_id in self.link_ids

    def describe(self) -> str:
        """A short human sentence for prompts and tool results."""
        if self.kind == "percentage":
            return f"{self.percent_off:g}% off"
        if self.kind == "multi_buy":
            return f"buy {self.min_quantity} or more, get {self.percent_off:g}% off"
        if self.kind == "threshold":
            every = "every " if self.repeat else ""
            cap = f" (up to {self.max_discount:g})" if self.max_discount else ""
            return f"spend {every}{self.threshold:g} save {self.discount:g}{cap}"
        return f"coupon {self.code}: {self.discount:g} off orders of {self.min_spend:g} or more"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "kind": self.kind, "title": self.title}
        if self.link_ids:
            data["link_ids"] = list(self.link_ids)
        if self.campaign_id:
            data["campaign_id"] = self.campaign_id
        if self.kind in ("percentage", "multi_buy"):
            data["percent_off"] = self.percent_off
        if self.kind == "multi_buy":
            data["min_quantity"] = self.min_quantity
        if self.kind == "threshold":
            data.update(threshold=self.threshold, discount=self.discount, repeat=self.repeat)
            if self.max_discount is not None:
                data["max_discount"] = self.max_discount
        if self.kind == "coupon":
            data.update(code=self.code, discount=self.discount, min_spend=self.min_spend)
        return data

    @classmethod
    def read(cls, reader: FieldReader, raw: Any, path: str) -> Promotion | None:
        data = reader.mapping(raw, path)
        if data is None:
            return None
        before = len(reader.problems)
        reader.unknown_keys(
            data,
            path,
            {
                "id",
                "kind",
                "title",
                "link_ids",
                "percent_off",
                "min_quantity",
                "threshold",
                "discount",
                "repeat",
                "max_discount",
                "code",
                "min_spend",
                "campaign_id",
            },
        )
        pid = reader.string(data, "id", path)
        kind = reader.choice(data, "kind", path, PROMOTION_KINDS)
        title = reader.string(data, "title", path, required=False, default="")
        link_ids: list[int] = []
        for i, item in enumerate(reader.listing(data, "link_ids", path)):
            if isinstance(item, bool) or not isinstance(item, int) or item < 1:
                reader.problem(
                    f"{path}.link_ids[{i}]", f"must be a link id (integer >= 1), got {item!r}"
                )
            else:
                link_ids.append(item)
        kwargs: dict[str, Any] = {}
        if kind in ("percentage", "multi_buy"):
            kwargs["percent_off"] = (
                reader.number(data, "percent_off", path, minimum=0, maximum=100) or 0.0
            )
        if kind == "multi_buy":
            kwargs["min_quantity"] = reader.integer(data, "min_quantity", path, minimum=2) or 2
        if kind == "threshold":
            kwargs["threshold"] = reader.number(data, "threshold", path, minimum=0.01) or 0.0
            kwargs["discount"] = reader.number(data, "discount", path, minimum=0) or 0.0
            repeat = data.get("repeat", False)
            if not isinstance(repeat, bool):
                reader.problem(f"{path}.repeat", "must be true or false")
                repeat = False
            kwargs["repeat"] = repeat
            kwargs["max_discount"] = reader.number(
                data, "max_discount", path, required=False, minimum=0
            )
        if kind == "coupon":
            kwargs["code"] = reader.string(data, "code", path)
            kwargs["discount"] = reader.number(data, "discount", path, minimum=0) or 0.0
            kwargs["min_spend"] = (
                reader.number(data, "min_spend", path, required=False, default=0.0, minimum=0)
                or 0.0
            )
        campaign_id = reader.string(data, "campaign_id", path, required=False)
        if len(reader.problems) > before:
            return None
        return cls(
            id=pid,
            kind=kind,
            title=title or "",
            link_ids=tuple(link_ids),
            campaign_id=campaign_id,
            **kwargs,
        )


@dataclass
class QuoteLine:
    link_id: int
    name: str
    unit_price: float
    quantity: int
    subtotal: float
    discount: float
    promotion_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PriceQuote:
    """The priced cart: every line, each discount layer, the total and hints."""

    lines: list[QuoteLine]
    subtotal: float
    product_discount: float
    threshold_discount: float
    threshold_promotion_id: str | None
    coupon_discount: float
    coupon_code: str | None
    total: float
    applied_promotion_ids: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    applied_rules: list[str] = field(default_factory=list)  # each applied rule in words

    @property
    def saving(self) -> float:
        return money(Decimal(str(self.subtotal)) - Decimal(str(self.total)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": [line.to_dict() for line in self.lines],
            "subtotal": self.subtotal,
            "product_discount": self.product_discount,
            "threshold_discount": self.threshold_discount,
            "threshold_promotion_id": self.threshold_promotion_id,
            "coupon_discount": self.coupon_discount,
            "coupon_code": self.coupon_code,
            "total": self.total,
            "saving": self.saving,
            "applied_promotion_ids": list(self.applied_promotion_ids),
            "applied_rules": list(self.applied_rules),
            "notes": list(self.notes),
        }


class PromotionError(ValueError):
    """A cart or coupon that cannot be priced (unknown link, bad quantity, unknown code)."""


@dataclass(frozen=True)
class CartItem:
    link_id: int
    name: str
    unit_price: float
    quantity: int


def _threshold_saving(rule: Promotion, eligible: Decimal) -> Decimal:
    threshold = Decimal(str(rule.threshold))
    if eligible < threshold:
        return Decimal(0)
    times = int(eligible // threshold) if rule.repeat else 1
    saving = Decimal(str(rule.discount)) * times
    if rule.max_discount is not None:
        saving = min(saving, Decimal(str(rule.max_discount)))
    return min(saving, eligible)


def price_cart(
    *, items: list[CartItem], promotions: list[Promotion], coupon_code: str | None = None
) -> PriceQuote:
    """Price ``items`` under ``promotions`` (best product rule, best threshold, one coupon)."""
    if not items:
        raise PromotionError("the cart is empty; give at least one {link_id, quantity}")
    lines: list[QuoteLine] = []
    after_product: dict[int, Decimal] = {}
    product_discount = Decimal(0)
    applied: list[str] = []
    notes: list[str] = []
    for item in items:
        if item.quantity < 1:
            raise PromotionError(
                f"quantity for link {item.link_id} must be >= 1, got {item.quantity}"
            )
        subtotal = Decimal(str(item.unit_price)) * item.quantity
        best_rule, best_saving = None, Decimal(0)
        for rule in promotions:
            if not rule.applies_to(item.link_id):
                continue
            if rule.kind == "percentage" or (
                rule.kind == "multi_buy" and item.quantity >= rule.min_quantity
            ):
                saving = (subtotal * Decimal(str(rule.percent_off)) / 100).quantize(
                    CENT, ROUND_HALF_UP
                )
                if saving > best_saving:
                    best_rule, best_saving = rule, saving
            elif rule.kind == "multi_buy":
                notes.append(
                    f"link {item.link_id}: buy {rule.min_quantity - item.quantity} more to get "
                    f"{rule.percent_off:g}% off ({rule.id})"
                )
        if best_rule is not None:
            applied.append(best_rule.id)
        product_discount += best_saving
        after_product[item.link_id] = (
            after_product.get(item.link_id, Decimal(0)) + subtotal - best_saving
        )
        lines.append(
            QuoteLine(
                item.link_id,
                item.name,
                money(item.unit_price),
                item.quantity,
                money(subtotal),
                money(best_saving),
                best_rule.id if best_rule else None,
            )
        )
    cart_after_product = sum(after_product.values(), Decimal(0))

    best_threshold, threshold_saving = None, Decimal(0)
    for rule in promotions:
        if rule.kind != "threshold":
            continue
        eligible = sum((v for k, v in after_product.items() if rule.applies_to(k)), Decimal(0))
        saving = _threshold_saving(rule, eligible)
        if saving > threshold_saving:
            best_threshold, threshold_saving = rule, saving
        elif saving == 0 and eligible > 0:
            gap = Decimal(str(rule.threshold)) - eligible
            notes.append(f"spend {money(gap):.2f} more to reach '{rule.describe()}' ({rule.id})")
    if best_threshold is not None:
        applied.append(best_threshold.id)
    after_threshold = cart_after_product - threshold_saving

    coupon_saving = Decimal(0)
    used_code = None
    if coupon_code:
        coupon = next((r for r in promotions if r.kind == "coupon" and r.code == coupon_code), None)
        if coupon is None:
            valid = sorted(r.code for r in promotions if r.kind == "coupon")
            raise PromotionError(
                f"unknown coupon code {coupon_code!r}; valid codes: {', '.join(valid) or 'none'}"
            )
        eligible = sum((v for k, v in after_product.items() if coupon.applies_to(k)), Decimal(0))
        if eligible >= Decimal(str(coupon.min_spend)):
            coupon_saving = min(Decimal(str(coupon.discount)), after_threshold)
            used_code = coupon.code
            applied.append(coupon.id)
        else:
            notes.append(
                f"coupon {coupon.code} needs {coupon.min_spend:g}; cart qualifies for "
                f"{money(eligible):.2f}"
            )
    subtotal_all = sum((Decimal(str(i.unit_price)) * i.quantity for i in items), Decimal(0))
    return PriceQuote(
        lines=lines,
        subtotal=money(subtotal_all),
        product_discount=money(product_discount),
        threshold_discount=money(threshold_saving),
        threshold_promotion_id=best_threshold.id if best_threshold else None,
        coupon_discount=money(coupon_saving),
        coupon_code=used_code,
        total=money(after_threshold - coupon_saving),
        applied_promotion_ids=applied,
        notes=notes,
        applied_rules=[
            f"{r.id}: {r.describe()}" for pid in applied for r in promotions if r.id == pid
        ],
    )


def optimal_quote(
    *, items: list[CartItem], promotions: list[Promotion], max_extra_quantity: int = 3
) -> dict[str, Any]:
    """Find the cheapest way to buy ``items``: the best coupon, and whether buying
    a few more of a line lowers the unit price (multi-buy) enough to be worth it.

    Returns ``{"best": quote, "per_unit": ..., "alternatives": [...]}`` where
    alternatives are other plans ordered by total, each with its coupon and
    quantities, so a reply can say why the best plan wins.
    """
    codes: list[str | None] = [None] + sorted({r.code for r in promotions if r.kind == "coupon"})
    plans: list[tuple[Decimal, Decimal, list[CartItem], PriceQuote]] = []
    quantity_options: list[list[CartItem]] = [items]
    for idx, item in enumerate(items):
        for extra in range(1, max_extra_quantity + 1):
            bumped = list(items)
            bumped[idx] = CartItem(item.link_id, item.name, item.unit_price, item.quantity + extra)
            quantity_options.append(bumped)
    for option in quantity_options:
        units = sum(i.quantity for i in option)
        for code in codes:
            quote = price_cart(items=option, promotions=promotions, coupon_code=code)
            if code and quote.coupon_code is None:
                continue  # coupon not reachable with this cart
            per_unit = Decimal(str(quote.total)) / units
            plans.append((Decimal(str(quote.total)), per_unit, option, quote))
    asked = [p for p in plans if p[2] is items]
    asked.sort(key=lambda p: p[0])
    best_total, _, _, best = asked[0]
    by_unit = sorted(plans, key=lambda p: (p[1], p[0]))
    best_unit_plan = by_unit[0]
    base_units = sum(i.quantity for i in items)
    result: dict[str, Any] = {
        "best": best.to_dict(),
        "best_total": money(best_total),
        "per_unit_price": money(best_total / base_units),
        "alternatives": [
            {
                "coupon_code": q.coupon_code,
                "total": q.total,
                "quantities": {str(i.link_id): i.quantity for i in opt},
            }
            for total, _, opt, q in asked[1:4]
        ],
    }
    if best_unit_plan[2] is not items and best_unit_plan[1] < best_total / base_units:
        opt, quote = best_unit_plan[2], best_unit_plan[3]
        result["cheaper_per_unit"] = {
            "quantities": {str(i.link_id): i.quantity for i in opt},
            "coupon_code": quote.coupon_code,
            "total": quote.total,
            "per_unit_price": money(best_unit_plan[1]),
        }
    return result
