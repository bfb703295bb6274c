"""What a reply claims and what the case's evidence supports, read with regular expressions.

Two halves, both plain functions so the programmatic judge's rules stay short:

- **claims**: money, percentages, other figures (with their unit), link numbers, stock words,
  coupon codes, free gifts, place names and greeted names, and which product a sentence is
  about (its link numbers or product names; a sentence naming none speaks about the product of
  the sentence before, else about the case's gold products);
- **evidence**: ``ProductFacts`` per catalogue product (price, promotion figures and prices,
  stock, every figure in its specs, description and FAQ, its names), the room's figures
  (room-wide promotions, coupons, the shop FAQ, campaign conditions), and the trajectory's tool
  results, attributed to the product they were about (a ``link_id`` in the arguments or the
  result) or to the room. A refused or failed tool call returned nothing and is no evidence.

The judge compares each claim with the facts of the product it is said about, never with a
value found anywhere in the case.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.livestream.catalogue import Catalogue, Product

_NUM = r"(\d+(?:[.,]\d+)?)"
_MONEY = [
    re.compile(rf"(?:¥|￥|\bRMB\s?|\bCNY\s?){_NUM}", re.I),
    re.compile(rf"{_NUM}\s?(?:yuan|rmb|cny|元|块)", re.I),
]
_PERCENT = re.compile(rf"{_NUM}\s?%")
_DISCOUNT_WORDS = re.compile(
    r"(?i)\b(off|discount(ed|s)?|sale|deals?|save|saving|cheaper|less|promo(tion)?s?|"
    r"coupons?|reduced|markdown)\b"
)
_FREEBIES = re.compile(
    r"(?i)\b(buy (one|1) get (one|1)|bogo|free gifts?|gifts? for free|half[- ]price|"
    r"free for everyone|everything is free)\b"
)
_CODE = re.compile(r"\b(?:code|coupon)\s+([A-Z][A-Z0-9]{3,})\b")
_LINK = re.compile(
    r"(?:#\s?|\blink\s?#?\s?|\blink number\s|\bnumber\s|\bno\.\s?|\bitem\s|\bproduct\s#?)"
    r"(\d{1,3})\b",
    re.I,
)
_FIGURE = re.compile(
    r"(?<![\w.#])(\d+(?:\.\d+)?)(?!\d)(?:\s?(ml|mah|kg|g|cm|mm|cc|l|months?|days?|h|hours?|"
    r"minutes?|mins?|years?|pieces?|pcs|db|w|inch(?:es)?|ounces?|oz|liters?|litres?)\b)?",
    re.I,
)
_SOLD_OUT = re.compile(
    r"(?i)\b(sold out|out of stock|no stock|none left|not available|unavailable|"
    r"no (products?|units?|items?|pieces?|more) (left|in stock|available))\b"
)
_IN_STOCK = re.compile(
    r"(?i)\b(in stock|still available|is available|are available|(\d+) (?:left|in stock|"
    r"remaining))\b"
)
_STOCK_COUNT = re.compile(r"(?i)\b(\d+) (?:left|in stock|remaining)\b")
_REFUSAL = re.compile(
    r"(?i)(\b(can't|cannot|can not|unable to|not able "
    r"to|won't)\b.{0,25}\b(help|answer|talk|assist|discuss|share)\b"
    r"|not something I can)"
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_LETTER = re.compile(r"[A-Za-z\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_WORD = re.compile(r"[a-z][a-z']+")
_STOP_TEXT = """
about above after again against all also always am an and any are around as asked at away be
because been before being below between both but by can could did do does doing down during each
few for from further had has have having he her here hers him his how i if in into is it its just
know like me more most my no nor not now of off on once only or other our out over own please
really right same she should so some such than thank thanks that the their them then there these
they this those through to today tonight too under until up very want was we were what when
where which while who whom why will with would you your yours already joined thinking getting
buying first ready great question sorry hello there again asking still tell check
"""
STOPWORDS = frozenset(_STOP_TEXT.split())
PROMO_CONTEXT = re.compile(
    r"(?i)\b(spend|save|saving|off|coupon|orders? "
    r"of|total|come to|comes to|together|after|discount|"
    r"deal|deals|threshold|per unit|each|x\s?\d|\d\s?x)\b"
)

# Places a reply might name. One that no comment, history, room, catalogue, FAQ or tool result
# mentions is invented ("Hello to Wuhan!" when no viewer said Wuhan).
_PLACES_TEXT = (
    "Beijing Shanghai Guangzhou Shenzhen Chengdu Hangzhou Wuhan Xi'an Nanjing Chongqing Tianjin "
    "Suzhou Qingdao Kunming Harbin Changsha Zhengzhou Shenyang Dalian Xiamen Fuzhou Jinan Hefei "
    "Nanning Guiyang Lanzhou Urumqi Lhasa Hohhot Taiyuan Shijiazhuang Ningbo Wuxi Dongguan Foshan "
    "Sanya Haikou Macau Macao Taiwan Taipei Singapore Tokyo Osaka Seoul Bangkok London Paris "
    "Berlin Sydney Melbourne Toronto Vancouver Dubai Moscow Yunnan Sichuan Guangdong Zhejiang "
    "Jiangsu Fujian Hunan Hubei Henan Shandong Hainan Tibet Xinjiang Mongolia Manchuria Malaysia "
    "Japan Korea Thailand Vietnam Australia Canada America Europe Germany France Italy Spain"
)
PLACES = _PLACES_TEXT.split() + ["Hong Kong", "New York", "Los Angeles", "Kuala Lumpur"]
_PLACE = re.compile(r"\b(" + "|".join(re.escape(p) for p in PLACES) + r")\b")
# "Hi Lily!", "welcome, Tom": a name greeted in the reply must be one the room gave
_GREETED = re.compile(
    r"(?:\b(?:hi|hello|hey|welcome|thanks|thank you|bye|congrats|hugs)\b,?\s+(?:back\s+)?)"
    r"([A-Z][a-z]{2,})\b"
)
_NOT_NAMES_TEXT = (
    "everyone everybody all there guys friends dear darling babe team folks fam you again so for "
    "and sis bro honey lovely new the our my your sweetie friend buddy love back to from in "
    "tonight today everyone's"
)
NOT_NAMES = frozenset(_NOT_NAMES_TEXT.split())


_DIGIT = re.compile(r"\d")


def _num(text: str) -> float:
    return float(text.replace(",", "."))


def money_mentions(text: str) -> list[float]:
    if not _DIGIT.search(text):
        return []
    found = []
    for pattern in _MONEY:
        found += [_num(m.group(1)) for m in pattern.finditer(text)]
    return found


def money_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for pattern in _MONEY for m in pattern.finditer(text)]


def numbers(text: str) -> list[float]:
    return [_num(m) for m in re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\d])", text)]


def percent_mentions(text: str) -> list[tuple[float, int, int]]:
    """Every ``N%`` with its span."""
    return [(_num(m.group(1)), m.start(), m.end()) for m in _PERCENT.finditer(text)]


def figures(text: str) -> list[tuple[float, str, int, int]]:
    """Every figure (number with an optional unit) with its span; link references excluded."""
    return [
        (float(m.group(1)), (m.group(2) or "").lower(), m.start(), m.end())
        for m in _FIGURE.finditer(text)
    ]


_UNIT = {
    "cc": "ml",
    "l": "l",
    "liter": "l",
    "liters": "l",
    "litre": "l",
    "litres": "l",
    "month": "month",
    "months": "month",
    "day": "day",
    "days": "day",
    "h": "h",
    "hour": "h",
    "hours": "h",
    "minute": "min",
    "minutes": "min",
    "min": "min",
    "mins": "min",
    "year": "year",
    "years": "year",
    "piece": "count",
    "pieces": "count",
    "pcs": "count",
    "count": "count",
    "inch": "inch",
    "inches": "inch",
    "ounce": "oz",
    "ounces": "oz",
}


def unit_of(word: str) -> str:
    """A unit's one spelling: "hours" -> "h", "cc" -> "ml", "months" -> "month"."""
    word = word.lower()
    return _UNIT.get(word, word)


def unit_figures(text: str) -> set[tuple[float, str]]:
    """(number, unit) pairs a text states; a number without a unit has unit ""."""
    return {(n, unit_of(u)) for n, u, _, _ in figures(strip_link_mentions(text))}


def freebie_mentions(text: str) -> list[str]:
    return [m.group(0) for m in _FREEBIES.finditer(text)]


def coupon_codes(text: str) -> list[str]:
    return _CODE.findall(text)


def link_mentions(text: str) -> set[int]:
    if not _DIGIT.search(text):  # the fast path: most sentences name no number
        return set()
    return {int(m) for m in _LINK.findall(text)}


def has_discount_words(text: str) -> bool:
    return bool(_DISCOUNT_WORDS.search(text))


def sentences(text: str) -> list[str]:
    """Rough sentence split that keeps decimals (89.5) together."""
    return [s for s in re.split(r"(?<=[.!?;])\s+|(?<=[!?;])(?=\S)", text) if s.strip()]


def strip_link_mentions(text: str) -> str:
    """The text without its link references, so '#24' is not read as the number 24."""
    return _LINK.sub(" ", text) if _DIGIT.search(text) else text


def stock_claim(text: str) -> str | None:
    """'out', 'in' or None; 'out' wins when a text says both (it is the riskier claim)."""
    if _SOLD_OUT.search(text):
        return "out"
    if _IN_STOCK.search(text):
        return "in"
    return None


def stock_counts(text: str) -> list[int]:
    return [int(m) for m in _STOCK_COUNT.findall(text)]


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text))


def language_of(text: str) -> str:
    """'zh' when most letters are CJK, else 'en' (the only locales the sets use)."""
    letters = _LETTER.findall(text)
    if not letters:
        return "en"
    return "zh" if len(_CJK.findall(text)) / len(letters) > 0.3 else "en"


def content_words(text: str, min_len: int = 5) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= min_len and w not in STOPWORDS}


def stems(text: str) -> set[str]:
    """Content words cut to 4 letters ("streaming" -> "stre"), for 'does the reply take up
    the comment' checks."""
    return {w[:4] for w in content_words(text, min_len=4)}


def places(text: str) -> list[str]:
    return _PLACE.findall(text)


def greeted_names(text: str) -> list[str]:
    return [n for n in _GREETED.findall(text) if n.lower() not in NOT_NAMES]


def walk_values(value: Any) -> Iterable[Any]:
    """Every scalar inside a nested JSON value."""
    if isinstance(value, dict):
        for item in value.values():
            yield from walk_values(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from walk_values(item)
    else:
        yield value


def near(value: float, candidates: Iterable[float], tol: float = 0.011) -> bool:
    return any(abs(value - c) <= tol for c in candidates)


def comment_text(case: dict) -> str:
    return " ".join(
        c if isinstance(c, str) else str(c.get("text", "")) for c in case.get("comments", [])
    )


# --- evidence --------------------------------------------------------------------------------
@dataclass
class Facts:
    """The figures and words one product (or the room) is known by."""

    money: set[float] = field(default_factory=set)  # prices and promotion money figures
    prices: set[float] = field(default_factory=set)  # what "#N is X yuan" may say
    percents: set[float] = field(default_factory=set)  # discounts its promotions give
    spec_percents: set[float] = field(default_factory=set)  # "15% vitamin C"
    figures: set[float] = field(default_factory=set)  # every number it is known by
    stock: set[int] = field(default_factory=set)
    text: str = ""  # lower-case words it is known by (names, specs, FAQ, tool results)
    # (number, unit) of every figure: "yuan", "%", "count" (stock, quantities), "ml", "h" ...;
    # "" where the unit is not known (a number in a sentence: "3-5 days" gives 3 with "")
    units: set[tuple[float, str]] = field(default_factory=set)

    def merge(self, other: Facts) -> Facts:
        return Facts(
            self.money | other.money,
            self.prices | other.prices,
            self.percents | other.percents,
            self.spec_percents | other.spec_percents,
            self.figures | other.figures,
            self.stock | other.stock,
            f"{self.text} {other.text}",
            self.units | other.units,
        )

    def supports(self, number: float, unit: str) -> bool:
        """Whether a figure is among these facts: with its unit, the same number with the same
        unit (or a number whose unit is not known); without a unit, the number at all."""
        if not unit:
            return number in self.figures
        return (number, unit) in self.units or (number, "") in self.units


def spec_label(key: str) -> str:
    """The words a spec key names: "shelf_life_months" -> "shelf life", "battery" -> "battery"."""
    parts = key.lower().replace(" ", "_").split("_")
    if len(parts) > 1 and unit_of(parts[-1]) in _KNOWN_UNITS:
        parts = parts[:-1]
    return " ".join(parts)


@functools.lru_cache(maxsize=1024)
def _key_unit(key: str) -> str:
    """The unit a spec key names: "volume_ml" -> "ml", "warranty_months" -> "month"."""
    tail = key.lower().rsplit("_", 1)[-1]
    unit = unit_of(tail)
    return unit if unit in _KNOWN_UNITS else ""


_KNOWN_UNITS = {"ml", "mah", "g", "kg", "cm", "mm", "l", "month", "day", "h", "min", "year"}
_KNOWN_UNITS |= {"count", "inch", "oz", "db", "w"}


def _promo_prices(price: float, percent: float, max_items: int = 5) -> set[float]:
    """Prices a percentage off can lead to, for 1..max_items of a product."""
    return {round(n * price * (1 - percent / 100), 2) for n in range(1, max_items + 1)}


def product_facts(product: Product, catalogue: Catalogue) -> Facts:
    facts = Facts()
    facts.prices = {product.price} | {round(n * product.price, 2) for n in range(2, 6)}
    facts.stock = {product.stock}
    words = [product.name, product.category, product.description]
    for key, value in product.specs.items():
        words.append(f"{key.replace('_', ' ')} {value}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            facts.units.add((float(value), _key_unit(key)))
        else:
            facts.units |= unit_figures(str(value))
        facts.spec_percents |= {_num(m) for m in re.findall(rf"{_NUM}\s?%", str(value))}
    facts.spec_percents |= {_num(m) for m in re.findall(rf"{_NUM}\s?%", product.description)}
    for entry in product.faq:
        words.append(entry.answer)
    for promo in catalogue.promotions_for(product.link_id):
        words.append(promo.describe() if hasattr(promo, "describe") else promo.title)
        words.append(promo.title)
        if promo.percent_off:
            facts.percents.add(promo.percent_off)
            facts.prices |= _promo_prices(product.price, promo.percent_off)
        facts.money |= {promo.threshold, promo.discount, promo.min_spend}
        if promo.max_discount:
            facts.money.add(promo.max_discount)
        if getattr(promo, "min_quantity", 0):
            facts.figures.add(float(promo.min_quantity))
    facts.money |= facts.prices
    facts.text = " ".join(words).lower()
    for entry in [product.description, product.name, *(f.answer for f in product.faq)]:
        facts.units |= unit_figures(entry)
    facts.units |= {(m, "yuan") for m in facts.money} | {(p, "%") for p in facts.percents}
    facts.units |= {(p, "%") for p in facts.spec_percents} | {(float(product.stock), "count")}
    facts.units |= {(n, "count") for n, u in facts.units if u == "" and n == int(n)}
    facts.figures |= (
        facts.money | facts.percents | facts.spec_percents | {float(product.stock)}
    ) | set(numbers(strip_link_mentions(facts.text)))
    facts.figures |= {n for n, _ in facts.units}
    return facts


def room_facts(catalogue: Catalogue) -> Facts:
    """What the whole room offers: room-wide promotions, coupons, shop FAQ, campaigns."""
    facts = Facts()
    words = []
    for promo in catalogue.promotions:
        if promo.kind in ("threshold", "coupon"):
            facts.money |= {promo.threshold, promo.discount, promo.min_spend}
            if promo.max_discount:
                facts.money.add(promo.max_discount)
            words.append(promo.title)
            if promo.code:
                words.append(promo.code)
    for entry in catalogue.faq:
        words.append(entry.answer)
    for campaign in catalogue.campaigns:
        words += [campaign.name, *campaign.conditions]
    facts.text = " ".join(words).lower()
    facts.figures = facts.money | set(numbers(facts.text))
    facts.units = unit_figures(facts.text) | {(m, "yuan") for m in facts.money}
    return facts


_MONEY_KEY = re.compile(
    r"(price|total|discount|saving|save|amount|threshold|spend|cost|fee|pay)", re.I
)
_PERCENT_KEY = re.compile(r"(percent|pct|rate)", re.I)


def _add_tool_values(facts: Facts, value: Any, key: str = "") -> None:
    if isinstance(value, dict):
        for k, item in value.items():
            _add_tool_values(facts, item, str(k))
    elif isinstance(value, list | tuple):
        for item in value:
            _add_tool_values(facts, item, key)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        facts.figures.add(float(value))
        facts.units.add((float(value), "count" if key == "stock" else _key_unit(key)))
        if _MONEY_KEY.search(key):
            facts.money.add(float(value))
            facts.prices.add(float(value))
        if _PERCENT_KEY.search(key):
            facts.percents.add(float(value))
        if key == "stock":
            facts.stock.add(int(value))
    elif isinstance(value, str):
        facts.text += " " + value.lower()
        if not _DIGIT.search(value):
            return
        facts.units |= unit_figures(value)
        found = numbers(value)
        facts.figures |= set(found)
        facts.money |= set(money_mentions(value))
        facts.percents |= {p for p, _, _ in percent_mentions(value)}
        if _MONEY_KEY.search(key):
            facts.money |= set(found)


def made_calls(trajectory: dict | None) -> list[dict]:
    """The tool calls that ran: a call the runtime refused (blocked, unknown tool) or that
    failed (error, timeout) is not a call made."""
    return [c for c in (trajectory or {}).get("tool_calls", []) if not c.get("error")]


def _links_of(value: Any) -> set[int]:
    if isinstance(value, dict):
        found = {value["link_id"]} if isinstance(value.get("link_id"), int) else set()
        return found
    return set()


def tool_facts(trajectory: dict | None) -> tuple[dict[int, Facts], Facts]:
    """Tool results by the product they are about, and the rest (room-level results)."""
    by_link: dict[int, Facts] = {}
    room = Facts()
    for call in made_calls(trajectory):
        result = call.get("result")
        items = result if isinstance(result, list) else [result]
        for item in items:
            for wrapper in ("product", "item"):
                if isinstance(item, dict) and isinstance(item.get(wrapper), dict):
                    item = item[wrapper]
            links = _links_of(item) or _links_of(call.get("arguments") or {})
            if isinstance(item, dict) and isinstance(item.get("products"), list):
                links = set()
            target = by_link.setdefault(next(iter(links)), Facts()) if len(links) == 1 else room
            _add_tool_values(target, item)
    return by_link, room


def gold_links(case: dict, catalogue: Catalogue) -> set[int]:
    """The products the case asks about: the gold facts' and gold tool calls' link ids; a case
    that has neither names them in its comments (or means the one on screen by "this")."""
    gold = case.get("gold") or {}
    links = {
        f["link_id"] for f in gold.get("required_facts", []) if isinstance(f.get("link_id"), int)
    }
    for call in gold.get("tool_calls", []):
        args = call.get("arguments") or {}
        if isinstance(args.get("link_id"), int):
            links.add(args["link_id"])
        for item in args.get("items") or []:
            if isinstance(item, dict) and isinstance(item.get("link_id"), int):
                links.add(item["link_id"])
    if links:
        return links
    text = comment_text(case)
    links = {x for x in link_mentions(text) if catalogue.product(x)}
    current = (case.get("room") or {}).get("current_link_id")
    if not links and current and re.search(r"(?i)\b(this|current|on screen|holding)\b", text):
        links = {current}
    return links
