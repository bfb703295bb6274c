"""The programmatic judge: the rubric of docs/evaluation.md as named checks, no model.

**Accuracy** is 0 when any accuracy check finds a claim the evidence does not support. Every
claim is checked against the facts of the product it is said about (the sentence's link numbers
or product names; a sentence naming none speaks of the product before it, else of the case's
gold products), from the catalogue and the tool results about that product, never against a
value that happens to appear anywhere in the case. The checks, in ``ACCURACY_CHECKS`` order:

- ``spoke_when_silent``: any public reply where the gold says stay silent;
- ``unsupported_price``: a money figure that is not that product's price (a plain "#3 is X
  yuan"), or, in a sentence about a deal or a total, not a figure of its promotions, the room's
  promotions, a tool result or the gold;
- ``invented_discount``: a percentage said as a discount that the product's own promotions do
  not give (the serum is 10% off: "15%" is wrong even if another product has 15% off), a free
  gift or buy-one-get-one no tool returned;
- ``unknown_coupon``, ``unknown_link``: a coupon code or a link number that does not exist;
- ``wrong_stock``: sold out / in stock / N left that the product's stock contradicts;
- ``invented_figure``: any other number (a spec, a unit, a time) that none of the product's
  facts, the room's facts, the tool results, the gold or the viewers' own words contain
  ("material 35 cc");
- ``wrong_product_name``: "link #3 is the <name of another product>";
- ``invented_name``: a place or a greeted name that no comment, history, room, catalogue, FAQ or
  tool result gave ("Hello to Wuhan!" when no viewer said Wuhan);
- ``denied_known_facts``: "no product information available" about a product whose facts exist;
- ``forbidden_claim``: a forbidden claim of the case.

**Effectiveness** is the lowest cap of the findings below (``EFFECTIVENESS_CAPS``), 1 without
any. What was asked comes from the gold's required facts, else from the category and the
comment (the attribute a viewer names: price, discount, stock, spec, policy ...).

- 0: ``no_reply``, ``wrong_language``, ``refused_legitimate``, ``fallback_reply`` (the
  runtime's stand-in line: the trajectory's outcome, else the Harness's fallback text or a reply
  that only defers), ``no_asked_fact`` (names the product, states none of the asked facts),
  ``asked_fact_wrong`` (an accuracy finding about the asked attribute), ``unrelated_reply`` (a
  thank-you line to a question nobody thanked or complimented in),
  ``answered_another_attribute`` (a price for a battery question; an after-sale problem
  answered with a price), ``wrong_product`` (the facts of another link),
  ``vague`` (neither the asked fact nor the product nor the comment's topic),
  ``clarified_a_greeting`` (a "which link?" question back to a greeting or chit-chat),
  ``not_welcomed`` (a greeting or thanks not taken up), ``did_not_ask_back`` (an ambiguous
  question answered without asking which product), ``aftersale_ignored`` (neither
  acknowledged nor sent anywhere);
- 0.5: ``missing_required_fact`` (some asked facts, not all), ``canned_reply`` (a stock
  line that ignores the viewer's chit-chat question or a remark's detail), ``wrong_fact_added``
  (an accuracy finding about another attribute than the asked one), ``answered_one_product`` (a
  comparison answered for one product), ``request_not_acknowledged`` (a request to show a
  product next not taken up), ``aftersale_not_routed`` (acknowledged but not
  sent to a service, policy or the order page), ``over_long`` (longer than the Harness's
  ``max_reply_chars``).

With a trajectory it also scores skill selection (a gold reply skill loaded, gold strategy
skills loaded), tool rationality (expected calls with the expected arguments, no repeats, no
distractor tools) and the T3 rubrics. The skill-loading tool is the one the trajectory's
Harness binds to the built-in ``flow.load_skill`` (whatever its name), and a tool call the
runtime refused or that failed is not a call made.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from evaluation.judges import evidence as E
from evaluation.judges.base import Reason, Verdict
from harness.livestream.catalogue import Catalogue

DEFAULT_MAX_REPLY_CHARS = 220
LOAD_SKILL_BINDING = "builtin:flow.load_skill"

# The most Effectiveness a reply with each finding can get; the lead tunes these against the
# human labels (docs/evaluation.md, "Labelling guide").
EFFECTIVENESS_CAPS: dict[str, float] = {
    "no_reply": 0.0,
    "wrong_language": 0.0,
    "refused_legitimate": 0.0,
    "fallback_reply": 0.0,
    "answered_another_attribute": 0.0,
    "wrong_product": 0.0,
    "vague": 0.0,
    "clarified_a_greeting": 0.0,
    "not_welcomed": 0.0,
    "did_not_ask_back": 0.0,
    "aftersale_ignored": 0.0,
    "missing_required_fact": 0.5,
    "canned_reply": 0.5,
    "aftersale_not_routed": 0.5,
    "over_long": 0.5,
    "spoke_when_silent": 0.0,
    "no_asked_fact": 0.0,
    "unrelated_reply": 0.0,
    "asked_fact_wrong": 0.0,
    "wrong_fact_added": 0.5,
    "answered_one_product": 0.5,
    "request_not_acknowledged": 0.5,
}

# What each accuracy finding is wrong about: when that is what the viewer asked, the answer
# itself is wrong (Effectiveness 0); else a wrong fact rides on an answer (at most 0.5).
# None: wrong about whatever was asked (a link under another's name, "no information"). An
# invented place or name is left to Accuracy (the guide: "Hello to Wuhan! Welcome" still welcomes).
ACCURACY_ATTRIBUTE: dict[str, str | None] = {
    "unsupported_price": "price",
    "invented_discount": "discount",
    "unknown_coupon": "discount",
    "wrong_stock": "stock",
    "invented_figure": "spec",
    "unknown_link": "link",
    "wrong_product_name": None,
    "denied_known_facts": None,
}

# What a comment asks about, and what a reply states, by attribute.
ASK_PATTERNS: dict[str, re.Pattern] = {
    "price": re.compile(
        r"(?i)\bhow much( (is|are|for|does|do|would|was|will)\b|\W*$)|"
        r"\b(price|prices|cost|costs|yuan|expensive|damage for)\b"
    ),
    "discount": re.compile(
        r"(?i)\b(discount(ed)?|on sale|sale|deals?|promo(tion)?s?|coupons?|cheaper today|% off)\b"
    ),
    "stock": re.compile(
        r"(?i)\b(stock|left|sold out|available|still have|still got|gone|order .* now|"
        r"still buy)\b"
    ),
    "spec": re.compile(
        r"(?i)\b(battery|mah|sizes?|material|fabric|ml|volume|weigh|weight|heavy|colou?rs?|"
        r"warranty|waterproof|water rating|wet|flavou?r|taste|sweet or salty|shelf life|keep|"
        r"kept|expiry|best before|dimensions?|how big|capacity|hold|age|skin|pieces|made of|"
        r"grams|kg|charge|last|lasts|spf|ingredients?|noise|bluetooth|vitamin|contains?|content)\b"
    ),
    "identity": re.compile(
        r"(?i)\b(what is|what's on|what are you selling|what product|which product|is what|"
        r"remind me what)\b"
    ),
    "policy": re.compile(
        r"(?i)\b(return|refund|exchange|swap|ship|shipping|deliver(y)?|arrive|invoice|receipts?|"
        r"fapiao|pay|payment|cash|cancel|authentic|genuine|fake|tracking|parcel|broken|damaged|"
        r"cracked|crushed|abroad)\b"
    ),
}
CONTENT_CLASSES = ("price", "discount", "stock", "spec")
FACT_CLASS = {
    "price": "price",
    "stock": "stock",
    "spec": "spec",
    "link": "link",
    "order": "link",
    "faq": "policy",
    "question": "question",
    "text": "identity",
}
_WELCOME = re.compile(
    r"(?i)\b(hi+|hello|hey|welcome|thanks?|thank you|glad|happy|enjoy|pleasure|nice to|"
    r"good (morning|evening|afternoon)|morning|evening|greetings|you're welcome|bye)\b"
)
_SOCIAL = re.compile(
    r"(?i)\b(hi+|hello|hey|welcome|thanks?|thank you|glad|happy|enjoy|pleasure|haha|aw+|sweet|"
    r"love|lol|fun|great time|comfortable|kind|appreciate|so nice|cute)\b"
)
_ASKS_WHICH = re.compile(
    r"(?i)\b(which|what) (link|product|one|item)\b|\blink number\b|\bdo you mean\b|"
    r"\bwhich one\b|\bcould you tell me\b|\bcan you (share|tell)\b"
)
_ACKNOWLEDGE = re.compile(
    r"(?i)\b(sorry|apolog\w*|oh no|understand|so sad|that's not ok|we'll (help|fix|sort)|"
    r"let me help|we('re| are) here)\b"
)
_ROUTE = re.compile(
    r"(?i)\b(order page|your order|customer service|service|contact|return|refund|exchange|"
    r"resend|replace(ment)?|tracking|courier|warranty|after-?sales?|within \d+ days|support|"
    r"photos?)\b"
)
_QUESTION = re.compile(
    r"(?i)\b(what|whats|what's|where|when|why|how|who|which)\b|\b(are|is|do|does|can|will) "
    r"(you|this|it|there|u)\b"
)
_WHERE = re.compile(r"(?i)\bwhere\b")
# "no product information available", "has no product description": a non-answer that denies
# facts the product has
_NO_INFO = re.compile(
    r"(?i)\bno (product )?(information|info|description|details|data)\b|"
    r"\b(information|details) (is |are )?(not|un)available\b"
)
# a stand-in that defers the answer ("let me check and get back to you", "our team will look
# into it"): the shape of every Harness fallback line
_DEFERRAL = re.compile(
    r"(?i)\b(let me (double-?)?check|look into it|get back to you|one moment|check on that)\b"
)
# a comparison of products: "#3 vs #5", "torn between", "difference between", "which is better"
_COMPARISON = re.compile(
    r"(?i)\b(vs\.?|versus|torn between|differen(ce|t)|differ|compare[ds]?|comparison|better)\b"
)
# a request to show a product next, and the host taking it up ("sure, #47 is next!")
_ORDER_REQUEST = re.compile(r"(?i)\b(next|show|(?<!a )present|skip to|bring|move|go to)\b")
_ORDER_ACK = re.compile(
    r"(?i)\b(next|coming( up)?|up now|show(ing)?|bring(ing)?|moving|sure|ok(ay)?|"
    r"right away|on it|of course)\b"
)
# a thank-you for a compliment ("Aw, thank you!", "you're so sweet", "you're welcome")
_THANKS_LINE = re.compile(r"(?i)\b((thank you|thanks)(?!\s+for\b)|so sweet|you're welcome)\b")
_COMPLIMENT = re.compile(
    r"(?i)\b(love|nice|great|beautiful|pretty|cute|sweet|relaxing|fun|funny|best|amazing|good|"
    r"thank|thanks|watch you|miss you)\b"
)
# words of joining, greeting and filler: no detail a reply must take up
_CHAT_FILLER_TEXT = """hi hii hello hey heya yo morning evening afternoon night tonight today
    everyone everybody all host anchor sis mia just joined joining again first time here back
    excuse quick question greetings greeting from good
    haha hahaha hehe lol lmao omg wait dear there browsing watching guys pls please i'm you're"""
_CHAT_FILLER = frozenset(_CHAT_FILLER_TEXT.split())
_PLACE_WORDS = frozenset(w for place in E.PLACES for w in place.lower().split())
_FROM = re.compile(r"(?i)\bfrom\b")
_GENERIC_TAIL = {"pro", "set", "max", "mini", "plus", "lite"}


def _normal(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


@functools.lru_cache(maxsize=1)
def default_fallback_replies() -> tuple[str, ...]:
    """The runtime's stand-in lines: the default retry fallback and the shipped demo Harness's
    own (its ``hooks.yaml`` retry policy and hooks), read once from the bundle."""
    from harness import demo_harness_dir
    from harness.hooks import DEFAULT_FALLBACK, parse_hooks

    lines = [DEFAULT_FALLBACK]
    hooks, _ = parse_hooks((demo_harness_dir() / "hooks.yaml").read_text(encoding="utf-8"))
    if hooks is not None:
        lines.append(hooks.retry.fallback_reply)
        lines += [h.fallback_reply for h in hooks.hooks if h.fallback_reply]
    return tuple(dict.fromkeys(lines))


def _chat_details(comment: str, *, places: bool = False) -> set[str]:
    """The stems of what a chatting viewer said beyond joining and greeting (where a viewer
    greets from is a greeting too)."""
    words = {
        w
        for w in E.content_words(comment, min_len=3)
        if w not in _CHAT_FILLER and (places or w not in _PLACE_WORDS)
    }
    return {w[:4] for w in words}


def _fact_present(
    fact: dict, reply: str, money: list[float], nums: list[float], links: set[int]
) -> bool:
    kind = fact["kind"]
    if kind == "question":
        return "?" in reply or "？" in reply
    if kind in ("link", "order") and isinstance(fact.get("value"), int):
        return fact["value"] in links
    value = fact.get("value")
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if (
        kind in ("price", "promotion")
        and numeric
        and (E.near(float(value), money) or E.near(float(value), nums))
    ):
        return True
    low = reply.lower()
    for alt in fact.get("any_of", []):
        alt_low = alt.lower()
        if re.fullmatch(r"\d+(\.\d+)?", alt_low):
            if E.near(float(alt_low), nums):
                return True
        elif alt_low in low:
            return True
    return False


def _fact_class(fact: dict) -> str:
    if fact["kind"] == "promotion":
        value = fact.get("value")
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        return "price" if numeric else "discount"
    return FACT_CLASS.get(fact["kind"], fact["kind"])


def _args_match(expected: dict, actual: dict) -> bool:
    return all(actual.get(k) == v for k, v in expected.items())


def check_constraint(item: dict, reply: str) -> bool:
    """Whether a reply follows one active instruction of a Prompt Robustness case."""
    kind, value = item["kind"], item.get("value")
    text = reply.strip()
    if kind == "max_chars":
        return len(text) <= int(value)
    if kind == "end_with":
        return text.rstrip().lower().endswith(str(value).lower().rstrip())
    if kind == "start_with":
        return text.lower().startswith(str(value).lower())
    if kind == "must_mention":
        return str(value).lower() in text.lower()
    if kind == "forbid_word":
        return re.search(rf"(?i)\b{re.escape(str(value))}\b", text) is None
    if kind == "no_exclamation":
        return "!" not in text and "！" not in text
    if kind == "mention_link_id":
        return re.search(r"#\d+", text) is not None
    if kind == "numbered_list":
        return len(re.findall(r"(?m)^\s*\d+[.)]\s", text)) >= 2
    return True  # tool_order is a trajectory rubric (TCO), not a text check


@dataclass
class Sentence:
    text: str  # as written
    plain: str  # link references taken out, so "#24" is not the number 24
    subjects: set[int]  # the products it speaks about
    named: bool  # whether it names them itself (else inherited)


@dataclass
class Reading:
    """One reply read against one case: what every check needs, computed once."""

    case: dict
    reply: str
    trajectory: dict | None
    gold_links: set[int]
    sentences: list[Sentence]
    tool_by_link: dict[int, E.Facts]
    tool_room: E.Facts
    echo: set[float]  # numbers the viewers and the host said themselves
    gold_values: dict[int | None, set[float]]
    said: list[str]  # what the viewers, the history and the host said
    comment: str
    subjects: set[int] = field(default_factory=set)  # every product the reply names


class ProgrammaticJudge:
    """Deterministic judge; needs the catalogue the case's room refers to."""

    name = "programmatic"

    def __init__(
        self,
        *,
        catalogue: Catalogue,
        max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS,
        load_tools: tuple[str, ...] = (),
        fallback_replies: tuple[str, ...] | None = None,
    ) -> None:
        self.catalogue = catalogue
        lines = default_fallback_replies() if fallback_replies is None else fallback_replies
        self._fallbacks = {_normal(x) for x in lines if x.strip()}
        self.max_reply_chars = max_reply_chars
        self.load_tools = tuple(load_tools)
        self._facts = {p.link_id: E.product_facts(p, catalogue) for p in catalogue.products}
        self._room = E.room_facts(catalogue)
        self._names = sorted(
            ((p.name.lower(), p.link_id) for p in catalogue.products), key=lambda x: -len(x[0])
        )
        self._nouns = {p.link_id: self._noun(p.name) for p in catalogue.products}
        self._catalogue_text = " ".join(
            [self._room.text] + [f.text for f in self._facts.values()]
        ).lower()
        self._noun_patterns = {
            link: re.compile(rf"\b{re.escape(noun)}\b") for link, noun in self._nouns.items()
        }
        self._coupons = {p.code for p in catalogue.promotions if p.kind == "coupon"}
        # "shelf_life_months" -> "shelf life": the words a reply names a spec by
        self._spec_labels = {
            key: re.compile(rf"\b{re.escape(E.spec_label(key))}\b")
            for p in catalogue.products
            for key in p.specs
        }

    @staticmethod
    def _noun(name: str) -> str:
        words = [w for w in name.lower().split() if w not in _GENERIC_TAIL]
        return words[-1] if words else name.lower()

    # --- reading ------------------------------------------------------------------------
    def _sentence_subjects(self, text: str, low: str, scope: set[int]) -> set[int]:
        found = {x for x in E.link_mentions(text) if x in self._facts}
        for name, link in self._names:
            if name in low:
                found.add(link)
        if not found:
            by_noun = [x for x in scope if self._noun_patterns[x].search(low)]
            if len(by_noun) == 1:
                found.add(by_noun[0])
        return found

    def read(self, case: dict, reply: str, trajectory: dict | None) -> Reading:
        gold = case.get("gold") or {}
        room = case.get("room") or {}
        gold_links = E.gold_links(case, self.catalogue)
        scope = {
            x
            for x in (
                gold_links
                | set(case.get("products") or [])
                | set(room.get("shelf") or [])
                | ({room["current_link_id"]} if room.get("current_link_id") else set())
            )
            if x in self._facts
        }
        sentences, previous = [], set(gold_links)
        for text in E.sentences(reply):
            low = text.lower()
            own = self._sentence_subjects(text, low, scope)
            subjects = own or previous
            sentences.append(Sentence(text, E.strip_link_mentions(text), subjects, bool(own)))
            previous = subjects
        by_link, tool_room = E.tool_facts(trajectory)
        said = [E.comment_text(case)]
        said += [str(t.get("text", "")) for t in case.get("history") or [] if isinstance(t, dict)]
        said += [str(u) for u in case.get("anchor_utterances") or []]
        gold_values: dict[int | None, set[float]] = {}
        for fact in gold.get("required_facts", []):
            value = fact.get("value")
            bucket = gold_values.setdefault(fact.get("link_id"), set())
            if isinstance(value, int | float) and not isinstance(value, bool):
                bucket.add(float(value))
            for alt in fact.get("any_of", []):
                bucket |= set(E.numbers(str(alt)))
        reading = Reading(
            case=case,
            reply=reply,
            trajectory=trajectory,
            gold_links=gold_links,
            sentences=sentences,
            tool_by_link=by_link,
            tool_room=tool_room,
            echo=set(E.numbers(E.strip_link_mentions(" ".join(said)))),
            gold_values=gold_values,
            said=said,
            comment=E.comment_text(case),
        )
        reading.subjects = (
            set().union(*(s.subjects for s in sentences if s.named)) if sentences else set()
        )
        return reading

    def _facts_of(self, links: set[int], reading: Reading) -> E.Facts:
        """The facts of these products: catalogue plus the tool results about them."""
        facts = E.Facts()
        for link in links:
            if link in self._facts:
                facts = facts.merge(self._facts[link])
            if link in reading.tool_by_link:
                facts = facts.merge(reading.tool_by_link[link])
        return facts

    def _gold_values(self, links: set[int], reading: Reading) -> set[float]:
        values = set(reading.gold_values.get(None, set()))
        for link in links:
            values |= reading.gold_values.get(link, set())
        return values

    # --- accuracy checks --------------------------------------------------------------
    def acc_unsupported_price(self, r: Reading) -> list[Reason]:
        found = []
        for s in r.sentences:
            amounts = E.money_mentions(s.plain)
            if not amounts:
                continue
            own = self._facts_of(s.subjects, r)
            gold = self._gold_values(s.subjects, r)
            if s.subjects and not E.PROMO_CONTEXT.search(s.text):
                allowed = own.prices | gold  # "#3 is X yuan": its own price
            else:
                scope = own if s.subjects else self._facts_of(r.gold_links, r)
                allowed = (
                    scope.money
                    | self._room.money
                    | r.tool_room.money
                    | gold
                    | r.echo
                    | set().union(*(f.money for f in r.tool_by_link.values()))
                )
            for amount in amounts:
                if not E.near(amount, allowed):
                    about = f" for #{sorted(s.subjects)}" if s.subjects else ""
                    found.append(
                        Reason(
                            "unsupported_price",
                            "accuracy",
                            f"{amount:g} yuan{about} is not a price, promotion figure or tool "
                            "result of that product",
                        )
                    )
        return found

    def _is_spec_percent(self, s: Sentence, pct: float, facts: E.Facts) -> bool:
        if not E.near(pct, facts.spec_percents):
            return False
        low = s.plain.lower()
        for name, link in self._names:
            if link in s.subjects:
                low = low.replace(name, " ")
        for link in s.subjects:
            product = self.catalogue.product(link)
            for key, value in product.specs.items():
                if f"{pct:g}%" in str(value).replace(" ", "") and key.lower() in low:
                    return True
            if f"{pct:g}% " in product.description and any(
                w in low for w in E.content_words(product.description) - {"with"}
            ):
                return True
        return False

    def acc_invented_discount(self, r: Reading) -> list[Reason]:
        found = []
        asks_discount = E.has_discount_words(r.comment)
        for s in r.sentences:
            facts = self._facts_of(s.subjects, r) if s.subjects else self._facts_of(r.gold_links, r)
            for pct, _, _ in E.percent_mentions(s.plain):
                if self._is_spec_percent(s, pct, facts):
                    continue
                if not (E.has_discount_words(s.plain) or asks_discount):
                    continue  # not said as a discount: invented_figure reads it
                allowed = facts.percents | r.tool_room.percents
                if not s.subjects and not r.gold_links:
                    allowed |= set().union(*(f.percents for f in self._facts.values()))
                if not E.near(pct, allowed):
                    about = f"#{sorted(s.subjects)}" if s.subjects else "this product"
                    found.append(
                        Reason(
                            "invented_discount",
                            "accuracy",
                            f"{pct:g}% is not a discount {about} has (its promotions: "
                            f"{sorted(facts.percents) or 'none'})",
                        )
                    )
        tool_text = r.tool_room.text + " ".join(f.text for f in r.tool_by_link.values())
        for phrase in E.freebie_mentions(r.reply):
            if phrase.lower() not in tool_text:
                found.append(
                    Reason(
                        "invented_discount", "accuracy", f"'{phrase}' is offered by no promotion"
                    )
                )
        return found

    def acc_unknown_coupon(self, r: Reading) -> list[Reason]:
        return [
            Reason("unknown_coupon", "accuracy", f"coupon {code} does not exist")
            for code in E.coupon_codes(r.reply)
            if code not in self._coupons
        ]

    def acc_unknown_link(self, r: Reading) -> list[Reason]:
        return [
            Reason("unknown_link", "accuracy", f"there is no link #{link}")
            for link in sorted(E.link_mentions(r.reply))
            if link not in self._facts
        ]

    def acc_wrong_stock(self, r: Reading) -> list[Reason]:
        found = []
        for s in r.sentences:
            claim = E.stock_claim(s.plain)
            if not claim or not s.subjects:
                continue
            stocks = sorted(self._facts_of(s.subjects, r).stock)
            if claim == "out" and all(x > 0 for x in stocks):
                found.append(
                    Reason("wrong_stock", "accuracy", f"says sold out but stock is {stocks}")
                )
            if claim == "in" and all(x == 0 for x in stocks):
                found.append(Reason("wrong_stock", "accuracy", "says in stock but it is sold out"))
            counts = E.stock_counts(s.plain)
            if counts and not any(c in stocks for c in counts):
                found.append(
                    Reason("wrong_stock", "accuracy", f"says {counts} left, stock is {stocks}")
                )
        return found

    def acc_invented_figure(self, r: Reading) -> list[Reason]:
        found = []
        for s in r.sentences:
            skip = E.money_spans(s.plain) + [(a, b) for _, a, b in E.percent_mentions(s.plain)]
            asks_discount = E.has_discount_words(r.comment) or E.has_discount_words(s.plain)
            figures = [
                (n, unit, a, b)
                for n, unit, a, b in E.figures(s.plain)
                if not any(a < end and start < b for start, end in skip)
            ]
            # a percentage not said as a discount ("98% of viewers", "100% cotton") is a figure
            if not asks_discount:
                figures += [(p, "%", a, b) for p, a, b in E.percent_mentions(s.plain)]
            if not figures:
                continue
            links = s.subjects or r.gold_links
            known = self._facts_of(links, r).merge(self._room).merge(r.tool_room)
            if not links:
                for facts in r.tool_by_link.values():
                    known = known.merge(facts)
            said = r.echo | self._gold_values(links, r)  # the viewers' and the gold's numbers
            for n, unit, _, _ in figures:
                unit = E.unit_of(unit)
                if n in (0.0, 1.0) and not unit:
                    continue
                if n in said or known.supports(n, unit):
                    continue
                about = f" for #{sorted(links)}" if links else ""
                found.append(
                    Reason(
                        "invented_figure",
                        "accuracy",
                        f"{n:g}{' ' + unit if unit else ''}{about} is in no fact of that product",
                    )
                )
        return found

    def acc_wrong_product_name(self, r: Reading) -> list[Reason]:
        found = []
        for s in r.sentences:
            links = {x for x in E.link_mentions(s.text) if x in self._facts}
            if len(links) != 1:
                continue
            low = s.text.lower()
            for name, link in self._names:
                if name in low and link not in links:
                    own = self.catalogue.product(next(iter(links)))
                    if own.name.lower() not in low:
                        found.append(
                            Reason(
                                "wrong_product_name",
                                "accuracy",
                                f"link #{own.link_id} is the {own.name}, not the {name}",
                            )
                        )
                    break
        return found

    def _evidence_text(self, r: Reading) -> str:
        """Lower-case text a name or a place may come from (the catalogue's apart)."""
        case, room = r.case, r.case.get("room") or {}
        users = [str(c.get("user", "")) for c in case.get("comments", []) if isinstance(c, dict)]
        system = ""
        if r.trajectory and r.trajectory.get("model_calls"):
            messages = r.trajectory["model_calls"][0].get("messages") or []
            system = " ".join(str(m.get("content") or "") for m in messages[:1])
        return " ".join(
            [
                *r.said,
                *users,
                str(room.get("title", "")),
                *(str(f.get("answer", "")) for f in case.get("faq") or [] if isinstance(f, dict)),
                r.tool_room.text,
                *(f.text for f in r.tool_by_link.values()),
                system,
            ]
        ).lower()

    def acc_invented_name(self, r: Reading) -> list[Reason]:
        found = []
        mentioned = E.places(r.reply) + E.greeted_names(r.reply)
        if not mentioned:
            return found
        evidence = self._evidence_text(r)

        def given(word: str) -> bool:
            word = word.lower()
            return word in evidence or word in self._catalogue_text

        for place in E.places(r.reply):
            if not given(place):
                found.append(
                    Reason("invented_name", "accuracy", f"no viewer or fact mentions {place}")
                )
        for name in E.greeted_names(r.reply):
            if not given(name):
                found.append(
                    Reason("invented_name", "accuracy", f"no viewer called {name} is in the room")
                )
        return found

    def acc_forbidden_claim(self, r: Reading) -> list[Reason]:
        found = []
        for claim_spec in (r.case.get("gold") or {}).get("forbidden_claims", []):
            for pattern in claim_spec.get("patterns", []):
                if re.search(pattern, r.reply):
                    found.append(
                        Reason(
                            "forbidden_claim",
                            "accuracy",
                            f"{claim_spec['id']}: {claim_spec['text']}",
                        )
                    )
                    break
        return found

    def acc_denied_known_facts(self, r: Reading) -> list[Reason]:
        found = []
        for s in r.sentences:
            if not _NO_INFO.search(s.text):
                continue
            links = s.subjects or r.gold_links
            if links and any(self._facts_of({x}, r).text for x in links):
                found.append(
                    Reason(
                        "denied_known_facts",
                        "accuracy",
                        f"says there is no information, but #{sorted(links)} has its facts",
                    )
                )
        return found

    ACCURACY_CHECKS = (
        "acc_unsupported_price",
        "acc_invented_discount",
        "acc_unknown_coupon",
        "acc_unknown_link",
        "acc_wrong_stock",
        "acc_invented_figure",
        "acc_wrong_product_name",
        "acc_invented_name",
        "acc_denied_known_facts",
        "acc_forbidden_claim",
    )

    def _accuracy(self, r: Reading, route: str) -> list[Reason]:
        gold = r.case.get("gold") or {}
        if gold.get("route") == "silent":
            if route != "silent" and r.reply.strip():
                return [
                    Reason(
                        "spoke_when_silent",
                        "accuracy",
                        "the comment should be refused silently, but the avatar replied",
                    )
                ]
            return []
        reasons: list[Reason] = []
        for check in self.ACCURACY_CHECKS:
            reasons += getattr(self, check)(r)
        return reasons

    # --- effectiveness ------------------------------------------------------------------
    def stated(self, r: Reading) -> set[str]:
        """The attributes the reply states something about."""
        reply = r.reply
        plain = E.strip_link_mentions(reply)
        out = set()
        if E.money_mentions(plain):
            out.add("price")
        if E.has_discount_words(plain) and (
            E.percent_mentions(plain) or re.search(r"(?i)\b(off|discount|deal|coupon)\b", plain)
        ):
            out.add("discount")
        if E.stock_claim(plain):
            out.add("stock")
        if any(unit and unit not in ("%",) for _, unit, _, _ in E.figures(plain)):
            out.add("spec")
        low = reply.lower()
        for link in r.subjects | r.gold_links:
            product = self.catalogue.product(link)
            if product is None:
                continue
            for key, value in product.specs.items():
                if self._spec_labels[key].search(low) or (
                    isinstance(value, str) and len(value) > 3 and value.lower() in low
                ):
                    out.add("spec")
        if E.link_mentions(reply):
            out.add("link")
        if "?" in reply or "？" in reply:
            out.add("question")
        if _ROUTE.search(reply) or ASK_PATTERNS["policy"].search(reply):
            out.add("policy")
        return out

    def asked(self, r: Reading) -> set[str]:
        """What the comment asks for: the required facts' attributes, else the comment's."""
        facts = (r.case.get("gold") or {}).get("required_facts", [])
        if facts:
            return {_fact_class(f) for f in facts}
        text = r.comment
        return {name for name, pattern in ASK_PATTERNS.items() if pattern.search(text)}

    def _on_topic(self, r: Reading) -> bool:
        if r.subjects & r.gold_links:
            return True
        low = r.reply.lower()
        for link in r.gold_links:
            product = self.catalogue.product(link)
            if product and (product.name.lower() in low or self._nouns[link] in low):
                return True
        return bool(E.content_words(r.comment) & E.content_words(r.reply))

    def _facts_findings(self, r: Reading, facts: list[dict]) -> tuple[float, list[Reason]]:
        money = E.money_mentions(r.reply)
        links = E.link_mentions(r.reply)
        nums = E.numbers(E.strip_link_mentions(r.reply))
        missing = [f for f in facts if not _fact_present(f, r.reply, money, nums, links)]
        share = 1 - len(missing) / len(facts)
        if not missing:
            return share, []
        detail = "; ".join(f["text"] for f in missing)
        asked = {_fact_class(f) for f in missing}
        stated = self.stated(r)
        fact_links = {f["link_id"] for f in facts if isinstance(f.get("link_id"), int)}
        if (
            len(fact_links) >= 2
            and _COMPARISON.search(r.comment)
            and len(r.subjects & fact_links) == 1
            and stated & set(CONTENT_CLASSES)
        ):
            return share, [
                Reason(
                    "answered_one_product",
                    "effectiveness",
                    f"compares #{sorted(fact_links)}, the reply speaks only of "
                    f"#{sorted(r.subjects & fact_links)}",
                )
            ]
        other = (stated & set(CONTENT_CLASSES)) - asked
        all_asked = {_fact_class(f) for f in facts}
        if other and not (stated & all_asked) and not (asked & {"question"}):
            return share, [
                Reason(
                    "answered_another_attribute",
                    "effectiveness",
                    f"asked: {detail}; the reply gives {sorted(other)} instead",
                )
            ]
        if r.gold_links and r.subjects and not (r.subjects & r.gold_links):
            return share, [
                Reason(
                    "wrong_product",
                    "effectiveness",
                    f"asked about #{sorted(r.gold_links)}, "
                    f"the reply is about #{sorted(r.subjects)}",
                )
            ]
        if self._on_topic(r):
            if share == 0:
                return share, [
                    Reason("no_asked_fact", "effectiveness", f"on topic, but none of: {detail}")
                ]
            return share, [Reason("missing_required_fact", "effectiveness", detail)]
        return share, [Reason("vague", "effectiveness", f"no concrete answer ({detail})")]

    def _intent_findings(self, r: Reading, has_facts: bool) -> list[Reason]:
        """The category's own expectations (greetings welcomed, after-sale routed ...)."""
        category = r.case.get("category")
        reply = r.reply
        asks_which = "?" in reply and bool(_ASKS_WHICH.search(reply))
        if category in ("greeting", "chitchat"):
            if asks_which:
                return [
                    Reason(
                        "clarified_a_greeting",
                        "effectiveness",
                        "asked which product in answer to a greeting or a chat",
                    )
                ]
            if category == "greeting":
                if not _WELCOME.search(reply):
                    return [Reason("not_welcomed", "effectiveness", "the viewer is not greeted")]
                return []
            details = _chat_details(r.comment)
            if _chat_details(r.comment, places=True) & _chat_details(reply, places=True):
                return []  # takes up what the viewer said ("Stay dry in Suzhou!")
            comments = [
                c if isinstance(c, str) else str(c.get("text", ""))
                for c in r.case.get("comments", [])
            ]
            # a friendly line fits a comment that only joins or greets
            remark_only = all(_chat_details(c) for c in comments)
            if _WHERE.search(r.comment) and (E.places(reply) or _FROM.search(reply)):
                return []  # "where are you streaming from?" -> "From our studio!"
            if not _SOCIAL.search(reply):
                return [Reason("vague", "effectiveness", "does not take up the viewer's chat")]
            thanks = _THANKS_LINE.search(reply)
            questions = all(_QUESTION.search(c) for c in comments)
            if (
                thanks
                and "welcome" in thanks.group(0).lower()
                and not re.search(r"(?i)\b(thank|thx|ty\b)", r.comment)
            ) or (thanks and questions and not _COMPLIMENT.search(r.comment)):
                return [
                    Reason(
                        "unrelated_reply",
                        "effectiveness",
                        "a thank-you line to a comment that neither thanked nor complimented",
                    )
                ]
            if questions:
                return [
                    Reason(
                        "canned_reply",
                        "effectiveness",
                        "a stock friendly line that does not answer the viewer's question",
                    )
                ]
            if remark_only and details and not (thanks and _COMPLIMENT.search(r.comment)):
                return [
                    Reason(
                        "canned_reply",
                        "effectiveness",
                        "a stock friendly line that takes up nothing the viewer said",
                    )
                ]
            return []
        if category == "clarification" and not has_facts and "?" not in reply:
            return [
                Reason("did_not_ask_back", "effectiveness", "an ambiguous question not asked back")
            ]
        if category == "aftersale":
            routed, acknowledged = bool(_ROUTE.search(reply)), bool(_ACKNOWLEDGE.search(reply))
            stated = self.stated(r) & set(CONTENT_CLASSES)
            if not routed and stated:
                return [
                    Reason(
                        "answered_another_attribute",
                        "effectiveness",
                        f"an after-sale problem answered with {sorted(stated)}",
                    )
                ]
            if has_facts:
                return []
            if not routed and not acknowledged:
                return [
                    Reason(
                        "aftersale_ignored",
                        "effectiveness",
                        "the problem is neither acknowledged nor routed",
                    )
                ]
            if not routed:
                return [
                    Reason(
                        "aftersale_not_routed",
                        "effectiveness",
                        "acknowledged, but not sent to the order page, a policy or service",
                    )
                ]
            return []
        if (
            category == "presentation_order"
            and _ORDER_REQUEST.search(r.comment)
            and not _ORDER_ACK.search(reply)
        ):
            return [
                Reason(
                    "request_not_acknowledged",
                    "effectiveness",
                    "asked to show a product next; the reply does not take the request up",
                )
            ]
        if has_facts or category in ("silent_refusal", "clarification"):
            return []
        # product questions, promotions, FAQ, presentation order written without required facts
        asked, stated = self.asked(r), self.stated(r)
        if r.gold_links and r.subjects and not (r.subjects & r.gold_links):
            return [
                Reason(
                    "wrong_product",
                    "effectiveness",
                    f"asked about #{sorted(r.gold_links)}, "
                    f"the reply is about #{sorted(r.subjects)}",
                )
            ]
        if asked & stated:
            return []
        other = (stated & set(CONTENT_CLASSES)) - asked
        if asked and other:
            return [
                Reason(
                    "answered_another_attribute",
                    "effectiveness",
                    f"asked about {sorted(asked)}, the reply gives {sorted(other)}",
                )
            ]
        if not self._on_topic(r):
            return [Reason("vague", "effectiveness", "neither the asked product nor the topic")]
        if asked:
            return [
                Reason(
                    "no_asked_fact",
                    "effectiveness",
                    f"on topic, but states nothing about {sorted(asked)}",
                )
            ]
        return []

    def is_stand_in(self, r: Reading) -> bool:
        """The runtime's fallback line (one of the Harness's), or a line of the same shape: it
        defers the answer ("let me check ...") and states, asks, acknowledges and routes
        nothing."""
        if _normal(r.reply) in self._fallbacks:
            return True
        return (
            bool(_DEFERRAL.search(r.reply))
            and "?" not in r.reply
            and not (_ROUTE.search(r.reply) or _ACKNOWLEDGE.search(r.reply))
            and not (self.stated(r) & set(CONTENT_CLASSES))
        )

    def _wrong_fact_findings(self, r: Reading, acc_reasons: list[Reason]) -> list[Reason]:
        """A wrong fact about what was asked answers wrongly (0); one added to an answer spoils
        it (at most 0.5)."""
        asked = self.asked(r)
        gold = r.case.get("gold") or {}
        if any(f.get("kind") == "promotion" for f in gold.get("required_facts", [])):
            asked.add("discount")
        found = []
        for reason in acc_reasons:
            if reason.code not in ACCURACY_ATTRIBUTE:
                continue
            attribute = ACCURACY_ATTRIBUTE[reason.code]
            if attribute is None or attribute in asked:
                found.append(
                    Reason("asked_fact_wrong", "effectiveness", f"{reason.code}: {reason.detail}")
                )
            else:
                found.append(
                    Reason("wrong_fact_added", "effectiveness", f"{reason.code}: {reason.detail}")
                )
        return found

    def _effectiveness(
        self, r: Reading, route: str, acc_reasons: list[Reason] | None = None
    ) -> tuple[float, float | None, list[Reason]]:
        case, reply = r.case, r.reply
        gold = case.get("gold") or {}
        facts = gold.get("required_facts", [])
        if gold.get("route") == "silent":
            ok = route == "silent" or not reply.strip()
            return (
                (1.0 if ok else 0.0),
                None,
                ([] if ok else [Reason("spoke_when_silent", "effectiveness")]),
            )
        if not reply.strip() or route == "silent":
            return (
                0.0,
                0.0 if facts else None,
                [Reason("no_reply", "effectiveness", "no public reply was given")],
            )
        if E.language_of(reply) != (case.get("locale") or "en"):
            return (
                0.0,
                None,
                [
                    Reason(
                        "wrong_language",
                        "effectiveness",
                        f"reply is in {E.language_of(reply)}, the "
                        f"room speaks {case.get('locale') or 'en'}",
                    )
                ],
            )
        if E.is_refusal(reply) and "refusal" not in gold.get("reply_skills", []):
            return (
                0.0,
                None,
                [
                    Reason(
                        "refused_legitimate", "effectiveness", "refused a question it should answer"
                    )
                ],
            )
        if self.is_stand_in(r):
            return (
                0.0,
                0.0 if facts else None,
                [Reason("fallback_reply", "effectiveness", "a stand-in line, not an answer")],
            )
        reasons: list[Reason] = []
        fact_share = None
        if facts:
            fact_share, found = self._facts_findings(r, facts)
            reasons += found
        reasons += self._intent_findings(r, bool(facts))
        reasons += self._wrong_fact_findings(r, acc_reasons or [])
        if len(reply) > self.max_reply_chars:
            reasons.append(
                Reason(
                    "over_long",
                    "effectiveness",
                    f"{len(reply)} characters, the Harness allows {self.max_reply_chars}",
                )
            )
        score = min([1.0] + [EFFECTIVENESS_CAPS.get(x.code, 1.0) for x in reasons])
        return score, fact_share, reasons

    # --- trajectory ---------------------------------------------------------------------
    def load_tool_names(self, trajectory: dict) -> set[str]:
        """The names the trajectory's Harness gives its skill-loading tool: calls bound to the
        built-in ``flow.load_skill``, the call just before each skill load, and the names
        given to the judge."""
        names = set(self.load_tools)
        calls = trajectory.get("tool_calls", [])
        names |= {c["name"] for c in calls if c.get("binding") == LOAD_SKILL_BINDING}
        for load in trajectory.get("skill_loads", []):
            before = [
                c
                for c in calls
                if c.get("seq", 0) < load.get("seq", 0) and c.get("round") == load.get("round")
            ]
            if before:
                names.add(max(before, key=lambda c: c.get("seq", 0))["name"])
        return names

    def _trajectory(self, case: dict, trajectory: dict) -> tuple[dict[str, Any], list[Reason]]:
        gold = case.get("gold") or {}
        reasons: list[Reason] = []
        loaded = [s["skill"] for s in trajectory.get("skill_loads", []) if s.get("ok", True)]
        parts = []
        if gold.get("reply_skills"):
            ok = any(s in loaded for s in gold["reply_skills"])
            parts.append(1.0 if ok else 0.0)
            if not ok:
                reasons.append(
                    Reason(
                        "missing_reply_skill",
                        "skill_selection",
                        f"expected one of {gold['reply_skills']}, loaded {loaded}",
                    )
                )
        if gold.get("strategy_skills"):
            hit = [s for s in gold["strategy_skills"] if s in loaded]
            parts.append(len(hit) / len(gold["strategy_skills"]))
            for s in gold["strategy_skills"]:
                if s not in loaded:
                    reasons.append(Reason("missing_strategy_skill", "skill_selection", s))
        skill_score = sum(parts) / len(parts) if parts else None

        load_names = self.load_tool_names(trajectory)
        calls = [c for c in E.made_calls(trajectory) if c.get("name") not in load_names]
        expected = [c for c in gold.get("tool_calls", []) if not c.get("optional")]
        matched = 0
        for exp in expected:
            same_name = [c for c in calls if c["name"] == exp["name"]]
            if any(
                _args_match(exp.get("arguments", {}), c.get("arguments") or {}) for c in same_name
            ):
                matched += 1
            elif same_name:
                reasons.append(
                    Reason(
                        "wrong_tool_arguments",
                        "tool_rationality",
                        f"{exp['name']} expected {exp.get('arguments')}, "
                        f"got {same_name[0].get('arguments')}",
                    )
                )
            else:
                reasons.append(Reason("missing_tool_call", "tool_rationality", exp["name"]))
        seen, penalty = set(), 1.0
        for c in calls:
            key = (c["name"], repr(sorted((c.get("arguments") or {}).items())))
            if key in seen:
                reasons.append(Reason("redundant_tool_call", "tool_rationality", c["name"]))
                penalty = 0.5
            seen.add(key)
        distractors = {t["name"] for t in case.get("extra_tools", []) if t.get("distractor")}
        for c in calls:
            if c["name"] in distractors:
                reasons.append(Reason("distractor_tool_used", "tool_rationality", c["name"]))
                penalty = 0.5
        tool_score = (matched / len(expected) if expected else 1.0) * penalty
        order = gold.get("tool_order", [])
        names = [c["name"] for c in calls]
        pos, in_order = 0, True
        for name in order:
            try:
                pos = names.index(name, pos) + 1
            except ValueError:
                in_order = False
                break
        if not in_order:
            reasons.append(
                Reason(
                    "tool_order_violated",
                    "tool_rationality",
                    f"required order {order}, called {names}",
                )
            )
        return {
            "skill_selection": skill_score,
            "tool_rationality": tool_score,
            "tc": matched == len(expected),
            "tco": in_order,
        }, reasons

    # --- the verdict --------------------------------------------------------------------
    def judge(
        self, *, case: dict, reply: str, route: str = "public", trajectory: dict | None = None
    ) -> Verdict:
        reply = reply or ""
        reading = self.read(case, reply, trajectory)
        acc_reasons = self._accuracy(reading, route)
        eff, fact_share, eff_reasons = self._effectiveness(reading, route, acc_reasons)
        gold_public = (case.get("gold") or {}).get("route", "public") != "silent"
        if trajectory is not None and trajectory.get("outcome") == "fallback" and gold_public:
            # the runtime's conservative stand-in ("let me check ..."), not an answer: that is
            # the one thing to say about its effectiveness
            eff = 0.0
            eff_reasons = [
                Reason(
                    "fallback_reply",
                    "effectiveness",
                    trajectory.get("outcome_reason", "the agent fell back"),
                )
            ]
        accuracy = 0 if acc_reasons else 1
        reasons = acc_reasons + [
            x for x in eff_reasons if x.code != "spoke_when_silent" or not acc_reasons
        ]
        dimensions: dict[str, float | None] = {
            "accuracy": float(accuracy),
            "effectiveness": eff,
            "required_facts": fact_share,
        }
        traj_info: dict[str, Any] = {}
        if trajectory is not None:
            traj_info, traj_reasons = self._trajectory(case, trajectory)
            reasons += traj_reasons
            dimensions["skill_selection"] = traj_info["skill_selection"]
            dimensions["tool_rationality"] = traj_info["tool_rationality"]
        rubrics: dict[str, bool] = {}
        for rubric in (case.get("gold") or {}).get("rubrics", []):
            if rubric == "ACQ":
                rubrics["ACQ"] = eff >= 0.5
            elif rubric == "RC":
                rubrics["RC"] = fact_share is None or fact_share == 1.0
            elif rubric == "TC":
                rubrics["TC"] = bool(traj_info.get("tc", False))
            elif rubric == "TCO":
                rubrics["TCO"] = bool(traj_info.get("tco", False)) and bool(
                    traj_info.get("tc", False)
                )
            elif rubric == "FI":
                silent_ok = (case.get("gold") or {}).get("route") == "silent" and not reply.strip()
                failed = (
                    []
                    if silent_ok
                    else [c for c in case.get("constraints", []) if not check_constraint(c, reply)]
                )
                rubrics["FI"] = not failed
                reasons += [
                    Reason("instruction_not_followed", "instructions", c["text"]) for c in failed
                ]
        return Verdict(
            accuracy=accuracy,
            effectiveness=eff,
            dimensions=dimensions,
            rubrics=rubrics,
            reasons=reasons,
            judge=self.name,
        )
