"""What a reply claims, read with regular expressions: money, percentages, links, stock, codes.

The programmatic judge compares these claims with the evidence a correct reply
could rest on: the catalogue (products in play, their promotions), the gold
labels and every value returned by the trajectory's tool calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from harness.livestream.catalogue import Catalogue

_NUM = r"(\d+(?:[.,]\d+)?)"
_MONEY = [
    re.compile(rf"(?:¥|￥|\bRMB\s?|\bCNY\s?){_NUM}", re.I),
    re.compile(rf"{_NUM}\s?(?:yuan|rmb|cny|元|块)", re.I),
]
_PERCENT_OFF = re.compile(
    rf"{_NUM}\s?%\s?(?:off|discount|cheaper|less)|(?:discount|save|saving) of {_NUM}\s?%", re.I
)
_FREEBIES = re.compile(
    r"(?i)\b(buy (one|1) get (one|1)|bogo|free gifts?|gifts? for free|half[- ]price|"
    r"free for everyone|everything is free)\b"
)
_CODE = re.compile(r"\b(?:code|coupon)\s+([A-Z][A-Z0-9]{3,})\b")
_LINK = re.compile(
    r"(?:#\s?|\blink\s?#?\s?|\bnumber\s|\bno\.\s?|\bitem\s|\bproduct\s#?)(\d{1,3})\b", re.I
)
_SOLD_OUT = re.compile(
    r"(?i)\b(sold out|out of stock|no stock|none left|not available|unavailable)\b"
)
_IN_STOCK = re.compile(
    r"(?i)\b(in stock|still available|is available|are "
    r"available|(\d+) (?:left|in stock|remaining))\b"
)
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


def _num(text: str) -> float:
    return float(text.replace(",", "."))


def money_mentions(text: str) -> list[float]:
    found = []
    for pattern in _MONEY:
        found += [_num(m.group(1)) for m in pattern.finditer(text)]
    return found


def numbers(text: str) -> list[float]:
    return [_num(m) for m in re.findall(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\d])", text)]


def percent_off_mentions(text: str) -> list[float]:
    return [_num(a or b) for a, b in _PERCENT_OFF.findall(text)]


def freebie_mentions(text: str) -> list[str]:
    return [m.group(0) for m in _FREEBIES.finditer(text)]


def coupon_codes(text: str) -> list[str]:
    return _CODE.findall(text)


def link_mentions(text: str) -> set[int]:
    return {int(m) for m in _LINK.findall(text)}


PROMO_CONTEXT = re.compile(
    r"(?i)\b(spend|save|saving|off|coupon|orders? "
    r"of|total|come to|comes to|together|after|discount|"
    r"deal|deals|threshold|per unit|each|x\s?\d|\d\s?x)\b"
)


def sentences(text: str) -> list[str]:
    """Rough sentence split that keeps decimals (89.5) together."""
    return [s for s in re.split(r"(?<=[.!?;])\s+|(?<=[!?;])(?=\S)", text) if s.strip()]


def strip_link_mentions(text: str) -> str:
    """The text without its link references, so '#24' is not read as the number 24."""
    return _LINK.sub(" ", text)


def stock_claim(text: str) -> str | None:
    """'out', 'in' or None; 'out' wins when a reply says both (it is the riskier claim)."""
    if _SOLD_OUT.search(text):
        return "out"
    if _IN_STOCK.search(text):
        return "in"
    return None


def stock_counts(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"(?i)\b(\d+) (?:left|in stock|remaining)\b", text)]


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text))


def language_of(text: str) -> str:
    """'zh' when most letters are CJK, else 'en' (the only locales the sets use)."""
    letters = _LETTER.findall(text)
    if not letters:
        return "en"
    return "zh" if len(_CJK.findall(text)) / len(letters) > 0.3 else "en"


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) >= 5 and w not in STOPWORDS}


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


def tool_result_numbers(trajectory: dict | None) -> set[float]:
    found: set[float] = set()
    for call in (trajectory or {}).get("tool_calls", []):
        for value in walk_values(call.get("result")):
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float):
                found.add(float(value))
            elif isinstance(value, str):
                found |= set(numbers(value))
    return found


_MONEY_KEY = re.compile(
    r"(price|total|discount|saving|save|amount|threshold|spend|cost|fee|pay)", re.I
)


def _money_values(value: Any, key: str = "") -> Iterable[float]:
    """Money figures inside a tool result: numbers under money-like keys, and
    amounts written as money inside text ("spend 300 yuan")."""
    if isinstance(value, dict):
        for k, item in value.items():
            yield from _money_values(item, str(k))
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _money_values(item, key)
    elif isinstance(value, bool):
        return
    elif isinstance(value, int | float):
        if _MONEY_KEY.search(key):
            yield float(value)
    elif isinstance(value, str):
        yield from money_mentions(value)
        if _MONEY_KEY.search(key):
            yield from numbers(value)


def tool_result_money(trajectory: dict | None) -> set[float]:
    """Money figures the tools returned; a stock count or a quantity is not one."""
    found: set[float] = set()
    for call in (trajectory or {}).get("tool_calls", []):
        found |= set(_money_values(call.get("result")))
    return found


def tool_result_text(trajectory: dict | None) -> str:
    parts = []
    for call in (trajectory or {}).get("tool_calls", []):
        parts += [str(v) for v in walk_values(call.get("result")) if isinstance(v, str)]
    return " ".join(parts)


def scope_links(case: dict, reply: str, catalogue: Catalogue) -> set[int]:
    room = case.get("room") or {}
    links = set(case.get("products") or []) | set(room.get("shelf") or [])
    if room.get("current_link_id"):
        links.add(room["current_link_id"])
    links |= {link for link in link_mentions(reply) if catalogue.product(link)}
    return links


def supported_money(
    case: dict, reply: str, catalogue: Catalogue, trajectory: dict | None
) -> set[float]:
    """Money figures a correct reply may state for this case."""
    values: set[float] = set()
    for link in scope_links(case, reply, catalogue):
        product = catalogue.product(link)
        if product is None:
            continue
        values.add(product.price)
        for promo in catalogue.promotions_for(link):
            values |= {promo.threshold, promo.discount, promo.min_spend}
            if promo.max_discount:
                values.add(promo.max_discount)
    for promo in catalogue.promotions:
        if promo.kind in ("threshold", "coupon"):
            values |= {promo.threshold, promo.discount, promo.min_spend, promo.max_discount or 0.0}
    for fact in (case.get("gold") or {}).get("required_facts", []):
        if isinstance(fact.get("value"), int | float) and not isinstance(fact.get("value"), bool):
            values.add(float(fact["value"]))
    for comment in case.get("comments", []):
        text = comment if isinstance(comment, str) else comment.get("text", "")
        values |= set(numbers(text))
    values |= tool_result_money(trajectory)
    return values


def supported_percents(
    case: dict, reply: str, catalogue: Catalogue, trajectory: dict | None
) -> set[float]:
    values = set()
    for link in scope_links(case, reply, catalogue):
        values |= {p.percent_off for p in catalogue.promotions_for(link) if p.percent_off}
    return values | tool_result_numbers(trajectory)


def near(value: float, candidates: Iterable[float], tol: float = 0.011) -> bool:
    return any(abs(value - c) <= tol for c in candidates)
