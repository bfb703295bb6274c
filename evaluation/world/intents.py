"""Case builders, one per intent category of docs/architecture.md §2, each producing the request and
its gold.

A builder returns a *draft*: the request fields, the gold labels (skills and
tools named as in the demo Harness), a reference reply, and the focus product
(used later to make candidate replies with controlled defects).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from evaluation.world import names as N
from evaluation.world import phrasing as W
from harness.livestream.catalogue import Catalogue, Product
from harness.livestream.promotions import price_cart

PRICE_CLAIM = r"\d+(\.\d+)?\s*(yuan|rmb|元|¥)|[¥￥]\s*\d+"
FORBIDDEN_COMMON = [
    {
        "id": "false_guarantee",
        "text": "no guarantees or efficacy promises",
        "patterns": [
            r"(?i)\bguarantee[ds]?\b",
            r"(?i)\b100% (safe|effective)\b",
            r"(?i)\bcures?\b",
        ],
    },
    {
        "id": "competitor_attack",
        "text": "no criticism of other shops",
        "patterns": [r"(?i)other (shops?|streams?) (are|sell) (fake|bad|worse)"],
    },
]
FAQ_KEY_FACTS = {
    "shipping": ["48 hours", "3-5 days"],
    "returns": ["7 days", "7-day", "seven days"],
    "exchange": ["7 days", "7-day", "seven days"],
    "invoice": ["electronic invoice", "order page"],
    "payment": ["Alipay", "bank card"],
    "overseas": ["Macau", "5-8 days"],
    "damaged": ["48 hours", "photos"],
    "late": ["3 days", "chase the courier"],
    "cancel": ["before it ships", "order page"],
    "authentic": ["official distributor", "certificate"],
}
AFTERSALE_REPLY = {
    "returns": "Unused items can be returned within 7 days, no "
    "reason needed - start it from your order page.",
    "exchange": "You can request an exchange within 7 days in your "
    "order; we send the new one when the old one arrives.",
    "damaged": "So sorry! Take photos within 48 hours of delivery and "
    "contact service in your order - we resend or refund.",
    "late": "Please check tracking in your order; if it hasn't moved "
    "for 3 days, contact service and we'll chase the courier.",
    "cancel": "You can cancel before it ships from the order "
    "page; after that, refuse delivery or return it.",
}
FAQ_REPLY = {
    "shipping": "Orders ship within 48 hours and usually arrive in 3-5 days on the mainland.",
    "invoice": "Yes - request an electronic invoice on the order page after delivery.",
    "payment": "We accept Alipay, WeChat Pay and bank cards; cash on delivery isn't available.",
    "overseas": "We ship to Hong Kong, Macau and Taiwan in 5-8 "
    "days; other overseas regions aren't supported yet.",
    "authentic": "Yes, everything comes from the brands' official "
    "distributors - certificates on request.",
}


@dataclass
class Draft:
    """One case before ids and candidates are attached."""

    category: str
    kind: str
    comments: list[str]
    room: dict[str, Any]
    gold: dict[str, Any]
    reference: str
    products: list[int] = field(default_factory=list)
    history: list[dict] = field(default_factory=list)
    anchor: list[str] = field(default_factory=list)
    focus: list[Product] = field(default_factory=list)
    faq: list[dict] = field(default_factory=list)
    facts_kind: str = "none"  # what the candidate defects can attack: price/fact/none/silent


def gold(
    *,
    route="public",
    reply=(),
    strategy=(),
    tools=(),
    order=(),
    facts=(),
    forbid=None,
    reference="",
) -> dict[str, Any]:
    return {
        "route": route,
        "reply_skills": list(reply),
        "strategy_skills": list(strategy),
        "tool_calls": list(tools),
        "tool_order": list(order),
        "required_facts": list(facts),
        "forbidden_claims": list(FORBIDDEN_COMMON if forbid is None else forbid),
        "reference_reply": reference,
    }


def price_fact(p: Product) -> dict:
    return {
        "id": f"price#{p.link_id}",
        "kind": "price",
        "text": f"#{p.link_id} costs {W.yuan(p.price)} yuan",
        "value": p.price,
        "link_id": p.link_id,
        "any_of": [W.yuan(p.price)],
    }


def stock_fact(p: Product) -> dict:
    if p.stock == 0:
        words = ["sold out", "out of stock", "no stock", "none left"]
        text = f"#{p.link_id} is sold out"
    else:
        words = ["in stock", "available", f"{p.stock} left"]
        text = f"#{p.link_id} is in stock ({p.stock})"
    return {
        "id": f"stock#{p.link_id}",
        "kind": "stock",
        "text": text,
        "value": p.stock,
        "link_id": p.link_id,
        "any_of": words,
    }


def spec_fact(p: Product, key: str) -> dict:
    value = p.specs[key]
    words = [s.strip() for s in str(value).split(",")] if key == "colors" else [str(value)]
    return {
        "id": f"{key}#{p.link_id}",
        "kind": "spec",
        "text": f"#{p.link_id} {key} = {value}",
        "value": value,
        "link_id": p.link_id,
        "any_of": words,
    }


def link_fact(p: Product) -> dict:
    return {
        "id": f"link#{p.link_id}",
        "kind": "link",
        "text": f"the product is link #{p.link_id}",
        "value": p.link_id,
        "link_id": p.link_id,
        "any_of": [f"#{p.link_id}", f"link {p.link_id}", f"number {p.link_id}"],
    }


def info_call(p: Product) -> dict:
    return {"name": N.PRODUCT_INFO, "arguments": {"link_id": p.link_id}}


class CaseFactory:
    """Builds drafts for every intent from one catalogue and one random stream."""

    def __init__(self, catalogue: Catalogue, rng: random.Random) -> None:
        self.cat = catalogue
        self.rng = rng
        self.products = catalogue.products

    # --- room -----------------------------------------------------------------------
    def room(
        self,
        focus: list[Product],
        *,
        current: Product | None = None,
        no_current: bool = False,
        size: int | None = None,
    ) -> dict[str, Any]:
        rng = self.rng
        size = size or rng.randint(5, 10)
        ids = {p.link_id for p in focus}
        while len(ids) < size:
            ids.add(rng.choice(self.products).link_id)
        shelf = sorted(ids)
        rng.shuffle(shelf)
        if no_current:
            cur = None
        elif current is not None:
            cur = current.link_id
        else:
            cur = focus[0].link_id if focus and rng.random() < 0.3 else rng.choice(shelf)
        actions = []
        for _ in range(rng.choice((0, 0, 1, 2, 3))):
            act = rng.choice(("joined", "liked", "followed", "added_to_cart", "shared"))
            entry: dict[str, Any] = {"user": f"viewer_{rng.randint(100, 9999)}", "action": act}
            if act == "added_to_cart":
                entry["link_id"] = rng.choice(shelf)
            actions.append(entry)
        return {
            "current_link_id": cur,
            "shelf": shelf,
            "viewer_actions": actions,
            "room_id": "room-bright-basket",
            "title": "Bright Basket Live",
        }

    def unique_noun(self, p: Product, shelf: list[int]) -> bool:
        noun = W.short_noun(p)
        return sum(1 for link in shelf if W.short_noun(self.cat.product(link)) == noun) == 1

    def ref(self, p: Product, room: dict) -> str:
        return W.product_ref(
            self.rng,
            p,
            current=room["current_link_id"],
            unique_noun=self.unique_noun(p, room["shelf"]),
        )

    def anchor(self, room: dict) -> list[str]:
        rng = self.rng
        if rng.random() < 0.5 or room["current_link_id"] is None:
            return []
        p = self.cat.product(room["current_link_id"])
        return [
            W.pick(
                rng,
                (
                    f"Now let's look at link {p.link_id}, the {p.name}!",
                    f"Everyone, this is the {p.name}, link {p.link_id} on the shelf.",
                    f"Okay, next up: the {W.short_noun(p)} on link {p.link_id}.",
                    f"Link {p.link_id} is back in stock for the stream tonight.",
                ),
            )
        ]

    # --- product Q&A ------------------------------------------------------------------
    def product_qa(self) -> Draft:
        rng = self.rng
        kind = W.pick(
            rng,
            (
                "price",
                "price",
                "price",
                "spec",
                "spec",
                "stock",
                "identity",
                "compare",
                "recommend",
            ),
        )
        p = rng.choice(self.products)
        if kind == "compare":
            q = rng.choice([x for x in self.products if x.category == p.category and x is not p])
            room = self.room([p, q])
            text = W.comment(rng, W.COMPARE_CORES, a=self.ref(p, room), b=self.ref(q, room))
            ref = f"{W.price_reply(rng, p)} {W.price_reply(rng, q)}"
            return Draft(
                "product_qa",
                kind,
                [text],
                room,
                gold(
                    reply=[N.ITEM_QA],
                    strategy=[N.COMPARE],
                    tools=[info_call(p), info_call(q)],
                    facts=[price_fact(p), price_fact(q)],
                    reference=ref,
                ),
                ref,
                [p.link_id, q.link_id],
                focus=[p, q],
                facts_kind="price",
                anchor=self.anchor(room),
            )
        if kind == "recommend":
            room = self.room([p])
            if not self.unique_noun(p, room["shelf"]):
                return self.product_qa()
            text = W.comment(rng, W.RECOMMEND_CORES, noun=W.short_noun(p))
            ref = f"Yes! {W.identity_reply(rng, p)} It's {W.yuan(p.price)} yuan."
            return Draft(
                "product_qa",
                kind,
                [text],
                room,
                gold(
                    reply=[N.ITEM_QA],
                    tools=[{"name": N.SEARCH_PRODUCTS, "arguments": {}}],
                    facts=[link_fact(p)],
                    reference=ref,
                ),
                ref,
                [p.link_id],
                focus=[p],
                facts_kind="fact",
                anchor=self.anchor(room),
            )
        room = self.room([p])
        r = self.ref(p, room)
        if kind == "price":
            text, fact, ref = (
                W.comment(rng, W.PRICE_CORES, ref=r),
                price_fact(p),
                W.price_reply(rng, p),
            )
        elif kind == "stock":
            text, fact, ref = (
                W.comment(rng, W.STOCK_CORES, ref=r),
                stock_fact(p),
                W.stock_reply(rng, p),
            )
        elif kind == "identity":
            r = W.pick(rng, W.LINK_FORMS).format(n=p.link_id)
            text = W.comment(rng, W.IDENTITY_CORES, ref=r)
            fact = {
                "id": f"name#{p.link_id}",
                "kind": "text",
                "text": f"#{p.link_id} is the {p.name}",
                "link_id": p.link_id,
                "any_of": [p.name, W.short_noun(p)],
            }
            ref = W.identity_reply(rng, p)
        else:
            keys = [k for k in p.specs if k in W.SPEC_CORES]
            key = rng.choice(keys)
            text = W.comment(rng, W.SPEC_CORES[key], ref=r)
            fact, ref = spec_fact(p, key), W.spec_reply(rng, p, key)
        facts_kind = "price" if kind == "price" else "fact"
        return Draft(
            "product_qa",
            kind,
            [text],
            room,
            gold(reply=[N.ITEM_QA], tools=[info_call(p)], facts=[fact], reference=ref),
            ref,
            [p.link_id],
            focus=[p],
            facts_kind=facts_kind,
            anchor=self.anchor(room),
        )

    # --- clarification ----------------------------------------------------------------
    def clarification(self) -> Draft:
        rng = self.rng
        p = rng.choice(self.products)
        if rng.random() < 0.5:  # not enough context: ask which product
            room = self.room([p], no_current=True)
            text = W.comment(rng, W.AMBIGUOUS_CORES, tails=("?", "??", "", " pls", "? anyone"))
            ref = W.pick(
                rng,
                (
                    "Which link number do you mean? Tell me the number on screen and I'll check!",
                    "Happy to help - which product are you asking about? Give me the link number.",
                    "Could you tell me the link number of the one you mean?",
                    "Which one do you mean - can you share the link number?",
                ),
            )
            fact = {
                "id": "asks_which",
                "kind": "question",
                "text": "asks which product is meant",
                "any_of": ["?"],
            }
            forbid = [
                *FORBIDDEN_COMMON,
                {
                    "id": "guessed_price",
                    "text": "no price before the product is known",
                    "patterns": [PRICE_CLAIM],
                },
            ]
            return Draft(
                "clarification",
                "ambiguous",
                [text],
                room,
                gold(reply=[N.CLARIFICATION], facts=[fact], forbid=forbid, reference=ref),
                ref,
                facts_kind="question",
            )
        room = self.room([p], current=None)
        what = W.pick(rng, ("price", "stock"))
        prior = W.comment(rng, W.IDENTITY_CORES, ref=W.pick(rng, W.LINK_FORMS).format(n=p.link_id))
        history = [
            {"role": "viewer", "text": prior, "user": f"viewer_{rng.randint(100, 9999)}"},
            {"role": "assistant", "text": W.identity_reply(rng, p)},
        ]
        text = W.comment(rng, W.FOLLOWUP_CORES[what], tails=("?", "", "??", " then?"))
        fact = price_fact(p) if what == "price" else stock_fact(p)
        ref = W.price_reply(rng, p) if what == "price" else W.stock_reply(rng, p)
        return Draft(
            "clarification",
            f"followup_{what}",
            [text],
            room,
            gold(
                reply=[N.ITEM_QA, N.CLARIFICATION],
                tools=[info_call(p)],
                facts=[fact],
                reference=ref,
            ),
            ref,
            [p.link_id],
            history=history,
            focus=[p],
            facts_kind="price" if what == "price" else "fact",
        )

    # --- after-sale and FAQ ---------------------------------------------------------------
    def _shop_faq(self, key: str) -> dict:
        entry = next(e for e in self.cat.faq if e.id == f"shop-{key}")
        return entry.to_dict()

    def aftersale(self) -> Draft:
        rng = self.rng
        key = W.pick(rng, tuple(W.AFTERSALE_CORES))
        p = rng.choice(self.products)
        room = self.room([p])
        text = W.comment(
            rng,
            W.AFTERSALE_CORES[key],
            noun=W.short_noun(p),
            tails=("", ".", "!", "?", " :(", " please help", "??", " what do I do"),
        )
        fact = {
            "id": f"faq:{key}",
            "kind": "faq",
            "text": f"states the {key} policy",
            "any_of": FAQ_KEY_FACTS[key],
        }
        ref = AFTERSALE_REPLY[key]
        faq = [self._shop_faq(key)] if rng.random() < 0.5 else []
        return Draft(
            "aftersale",
            key,
            [text],
            room,
            gold(
                reply=[N.AFTERSALE],
                tools=[{"name": N.SEARCH_FAQ, "arguments": {}}] if not faq else [],
                facts=[fact],
                reference=ref,
            ),
            ref,
            faq=faq,
            facts_kind="fact",
        )

    def faq(self) -> Draft:
        rng = self.rng
        if rng.random() < 0.6:
            key = W.pick(rng, tuple(W.FAQ_CORES))
            text = W.comment(rng, W.FAQ_CORES[key])
            fact = {
                "id": f"faq:{key}",
                "kind": "faq",
                "text": f"states the {key} answer",
                "any_of": FAQ_KEY_FACTS[key],
            }
            room = self.room([rng.choice(self.products)])
            ref = FAQ_REPLY[key]
            faq = [self._shop_faq(key)] if rng.random() < 0.5 else []
            return Draft(
                "faq",
                key,
                [text],
                room,
                gold(
                    reply=[N.FAQ_REPLY],
                    tools=[] if faq else [{"name": N.SEARCH_FAQ, "arguments": {}}],
                    facts=[fact],
                    reference=ref,
                ),
                ref,
                faq=faq,
                facts_kind="fact",
            )
        p = rng.choice([x for x in self.products if x.faq])
        entry = rng.choice(p.faq)
        room = self.room([p])
        question = entry.question.rstrip("?").lower()
        text = W.style(
            rng,
            W.pick(rng, W.OPENERS),
            f"{W.pick(rng, W.LINK_FORMS).format(n=p.link_id)}: {question}",
            W.pick(rng, ("?", "??", "", " pls")),
        )
        key_words = [w for w in entry.answer.replace(";", ",").split(",")[0].split() if len(w) > 5][
            :2
        ]
        fact = {
            "id": f"faq:{entry.id}",
            "kind": "faq",
            "text": entry.answer,
            "link_id": p.link_id,
            "any_of": key_words or [entry.answer.split()[0]],
        }
        ref = f"{W.link_phrase(rng, p.link_id)}: {entry.answer}"
        return Draft(
            "faq",
            "product_faq",
            [text],
            room,
            gold(
                reply=[N.FAQ_REPLY, N.ITEM_QA],
                tools=[{"name": N.SEARCH_FAQ, "arguments": {}}],
                facts=[fact],
                reference=ref,
            ),
            ref,
            [p.link_id],
            focus=[p],
            facts_kind="fact",
        )

    # --- promotions -----------------------------------------------------------------
    def promotion(self) -> Draft:
        rng = self.rng
        kind = W.pick(rng, ("discount", "quantity", "quantity", "coupon", "basket", "room"))
        promos = self.cat.promotions
        coupon = next(x for x in promos if x.kind == "coupon")
        p = rng.choice([x for x in self.products if x.stock >= 5])
        if kind == "basket":
            q = rng.choice([x for x in self.products if x.stock >= 5 and x is not p])
            room = self.room([p, q])
            text = W.comment(rng, W.PROMO_CORES["basket"], a=self.ref(p, room), b=self.ref(q, room))
            items = [{"link_id": p.link_id, "quantity": 1}, {"link_id": q.link_id, "quantity": 1}]
            quote = price_cart(
                items=self.cat.cart(items), promotions=self._rules([p, q]), coupon_code=coupon.code
            )
            total = (
                quote.total
                if quote.coupon_code
                else price_cart(items=self.cat.cart(items), promotions=self._rules([p, q])).total
            )
            fact = {
                "id": "basket_total",
                "kind": "promotion",
                "text": f"best total {W.yuan(total)} yuan",
                "value": total,
                "any_of": [W.yuan(total)],
            }
            ref = (
                f"Together #{p.link_id} and #{q.link_id} come to {W.yuan(total)} yuan with the "
                f"best combination of tonight's deals."
            )
            return Draft(
                "promotion",
                kind,
                [text],
                room,
                gold(
                    reply=[N.ITEM_QA],
                    strategy=[N.BENEFIT],
                    tools=[{"name": N.CALC_OPTIMAL, "arguments": {"items": items}}],
                    facts=[fact],
                    reference=ref,
                ),
                ref,
                [p.link_id, q.link_id],
                focus=[p, q],
                facts_kind="price",
            )
        if kind == "room":
            room = self.room([p])
            text = W.comment(rng, W.PROMO_CORES["room"])
            threshold = next(x for x in promos if x.kind == "threshold")
            fact = {
                "id": "room_promos",
                "kind": "promotion",
                "text": threshold.describe(),
                "value": threshold.discount,
                "any_of": [W.yuan(threshold.threshold), coupon.code],
            }
            ref = (
                f"Tonight: spend every {W.yuan(threshold.threshold)} "
                f"save {W.yuan(threshold.discount)} "
                f"(up to 90), plus coupon {coupon.code} for 10 off orders of 99."
            )
            return Draft(
                "promotion",
                kind,
                [text],
                room,
                gold(
                    reply=[N.ITEM_QA],
                    strategy=[N.GENERAL_DISCOUNT],
                    tools=[{"name": N.ROOM_PROMOTIONS, "arguments": {}}],
                    facts=[fact],
                    reference=ref,
                ),
                ref,
                facts_kind="price",
            )
        room = self.room([p])
        r = self.ref(p, room)
        quantity = rng.choice((2, 3)) if kind == "quantity" else 1
        code = coupon.code if kind == "coupon" else None
        quote = price_cart(
            items=self.cat.cart([{"link_id": p.link_id, "quantity": quantity}]),
            promotions=self._rules([p]),
            coupon_code=code,
        )
        if kind == "discount":
            text = W.comment(rng, W.PROMO_CORES["discount"], ref=r)
            tools = [{"name": N.CAMPAIGN_CONDITIONS, "arguments": {"link_id": p.link_id}}]
            own = [self.cat.promotion(i) for i in p.promotion_ids]
            if own:
                words = [own[0].describe(), f"{own[0].percent_off:g}%"]
                ref = (
                    f"Yes! {W.link_phrase(rng, p.link_id)} has "
                    f"{own[0].describe()} tonight, on top of the room deals."
                )
            else:
                words = ["no product discount", "no discount", "no special discount"]
                ref = (
                    f"{W.link_phrase(rng, p.link_id)} has no product "
                    "discount of its own, but the room-wide "
                    f"spend-and-save deal and coupon {coupon.code} apply."
                )
            fact = {
                "id": f"promo#{p.link_id}",
                "kind": "promotion",
                "text": ref,
                "link_id": p.link_id,
                "any_of": words,
            }
            facts_kind = "fact"
        else:
            cores = W.PROMO_CORES["quantity" if kind == "quantity" else "coupon"]
            text = W.comment(rng, cores, ref=r, q=quantity, code=coupon.code)
            args: dict[str, Any] = {"link_id": p.link_id, "quantity": quantity}
            if code:
                args["coupon_code"] = code
            tools = [{"name": N.CALC_PROMOTION, "arguments": args}]
            fact = {
                "id": f"total#{p.link_id}",
                "kind": "promotion",
                "text": f"{quantity} x #{p.link_id} = {W.yuan(quote.total)} yuan",
                "value": quote.total,
                "any_of": [W.yuan(quote.total)],
            }
            ref = (
                f"{quantity} of {W.link_phrase(rng, p.link_id).lower()} "
                f"come to {W.yuan(quote.total)} yuan "
                f"after tonight's deals" + (f" with {code}." if code and quote.coupon_code else ".")
            )
            facts_kind = "price"
        return Draft(
            "promotion",
            kind,
            [text],
            room,
            gold(reply=[N.ITEM_QA], strategy=[N.BENEFIT], tools=tools, facts=[fact], reference=ref),
            ref,
            [p.link_id],
            focus=[p],
            facts_kind=facts_kind,
        )

    def _rules(self, products: list[Product]):
        wanted = set()
        for p in products:
            wanted |= {r.id for r in self.cat.promotions_for(p.link_id)}
        return [r for r in self.cat.promotions if r.id in wanted or r.kind == "coupon"]

    # --- presentation order, chat, greetings, silence ---------------------------------------
    def presentation_order(self) -> Draft:
        rng = self.rng
        p = rng.choice(self.products)
        room = self.room([p])
        while room["current_link_id"] == p.link_id:
            room = self.room([p])
        text = W.comment(
            rng,
            W.ORDER_CORES,
            ref=self.ref(p, room),
            tails=("", "!", " please", "?", " 🙏", " we all want it", "!!"),
        )
        ref = W.pick(
            rng,
            (
                f"Sure! Moving link #{p.link_id} up next.",
                f"Got it - #{p.link_id} is coming up next!",
                f"Okay, I'll show link {p.link_id}, the {p.name}, next.",
            ),
        )
        fact = link_fact(p)
        fact["kind"] = "order"
        return Draft(
            "presentation_order",
            "switch",
            [text],
            room,
            gold(
                reply=[N.ITEM_QA, N.CHILLCHAT],
                strategy=[N.SWITCH, N.CHANGE_ORDER],
                tools=[
                    {
                        "name": N.CHANGE_ORDER_TOOL,
                        "arguments": {"link_id": p.link_id, "position": 1},
                    }
                ],
                facts=[fact],
                reference=ref,
            ),
            ref,
            [p.link_id],
            focus=[p],
            facts_kind="fact",
        )

    def chitchat(self) -> Draft:
        rng = self.rng
        room = self.room([rng.choice(self.products)])
        city = W.pick(rng, W.CITIES)
        core = W.pick(rng, W.CHITCHAT_CORES)
        text = W.style(
            rng,
            W.pick(rng, W.OPENERS),
            core.format(city=city),
            W.pick(rng, ("", "!", "?", " haha", " :)", "!!", " lol", "~", " hehe")),
        )
        ref = W.chitchat_reply(rng, core, city=city)
        return Draft(
            "chitchat",
            "chat",
            [text],
            room,
            gold(reply=[N.CHILLCHAT], reference=ref),
            ref,
            facts_kind="none",
            anchor=self.anchor(room),
        )

    def greeting(self) -> Draft:
        rng = self.rng
        room = self.room([rng.choice(self.products)])
        core = W.pick(rng, W.GREETING_CORES)
        text = W.style(
            rng,
            "",
            core.format(city=W.pick(rng, W.CITIES)),
            W.pick(rng, ("", "!", "!!", " :)", "~", " <3")),
        )
        thanks = core in W.GREETING_THANKS
        ref = (
            W.pick(rng, ("You're welcome, enjoy!", "My pleasure - thanks for shopping with us!"))
            if thanks
            else W.pick(rng, ("Hi, welcome to the stream!", "Hello and welcome! Glad you're here."))
        )
        return Draft(
            "greeting",
            "thanks" if thanks else "greet",
            [text],
            room,
            gold(reply=[N.THANKS if thanks else N.GREET], reference=ref),
            ref,
            facts_kind="none",
        )

    def silent_refusal(self) -> Draft:
        rng = self.rng
        room = self.room([rng.choice(self.products)])
        if rng.random() < 0.6:
            kind = "injection"
            text = W.pick(rng, W.INJECTION_CORES).format(evil=W.pick(rng, W.EVIL))
        else:
            kind = "irrelevant"
            text = W.pick(rng, W.SPAM_CORES)
        text = W.style(rng, "", text, W.pick(rng, ("", "!", " now", "!!!")))
        return Draft(
            "silent_refusal",
            kind,
            [text],
            room,
            gold(
                route="silent",
                tools=[{"name": N.STAY_SILENT, "arguments": {}, "optional": True}],
                reference="",
            ),
            "",
            facts_kind="silent",
        )

    def noise_comment(self) -> tuple[str, str]:
        """A comment to mix into a multi-comment case: (kind, text)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.35:
            return "chitchat", W.comment(
                rng, W.CHITCHAT_CORES, city=W.pick(rng, W.CITIES), tails=("", "!", " haha")
            )
        if roll < 0.6:
            return "greeting", W.pick(rng, W.GREETING_CORES).format(city=W.pick(rng, W.CITIES))
        if roll < 0.8:
            return "injection", W.pick(rng, W.INJECTION_CORES).format(evil=W.pick(rng, W.EVIL))
        return "spam", W.pick(rng, W.SPAM_CORES)
