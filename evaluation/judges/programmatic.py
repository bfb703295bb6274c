"""The programmatic judge: checks a reply against the catalogue, the gold labels and the trajectory.

Accuracy is 0 when the reply states something no evidence supports: a money
figure that is not a price, promotion figure or tool result for the products
in play; a percentage discount, coupon code or freebie that no promotion
offers; a stock claim the catalogue contradicts; a link number that does not
exist; a forbidden claim of the case; or any public reply where the gold says
stay silent.

Effectiveness starts at 1 and drops to 0 for no reply, the wrong language, a
refusal of a legitimate question, or a reply that neither states the asked
facts nor is about the asked product or topic ("vague"); to 0.5 when the reply
is on topic but misses a required fact, or is longer than the Harness's
``max_reply_chars``.

With a trajectory it also scores skill selection (a gold reply skill loaded,
gold strategy skills loaded), tool rationality (expected calls with the
expected arguments, no repeats, no distractor tools) and the T3 rubrics.
"""

from __future__ import annotations

import re
from typing import Any

from evaluation.judges import evidence as E
from evaluation.judges.base import Reason, Verdict
from harness.livestream.catalogue import Catalogue

DEFAULT_MAX_REPLY_CHARS = 220


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


class ProgrammaticJudge:
    """Deterministic judge; needs the catalogue the case's room refers to."""

    name = "programmatic"

    def __init__(
        self, *, catalogue: Catalogue, max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS
    ) -> None:
        self.catalogue = catalogue
        self.max_reply_chars = max_reply_chars

    # --- accuracy -----------------------------------------------------------------
    def _accuracy(
        self, case: dict, reply: str, route: str, trajectory: dict | None
    ) -> list[Reason]:
        reasons: list[Reason] = []
        gold = case.get("gold") or {}
        if gold.get("route") == "silent":
            if route != "silent" and reply.strip():
                reasons.append(
                    Reason(
                        "spoke_when_silent",
                        "accuracy",
                        "the comment should be refused silently, but the avatar replied",
                    )
                )
            return reasons
        supported = E.supported_money(case, reply, self.catalogue, trajectory)
        exact = E.tool_result_money(trajectory) | {
            float(f["value"])
            for f in gold.get("required_facts", [])
            if isinstance(f.get("value"), int | float) and not isinstance(f.get("value"), bool)
        }
        for sentence in E.sentences(reply):
            links = [x for x in E.link_mentions(sentence) if self.catalogue.product(x)]
            # "#3 is only 99 yuan": a plain price statement about one product must be its price
            own_price = (
                self.catalogue.product(links[0]).price
                if len(links) == 1 and not E.PROMO_CONTEXT.search(sentence)
                else None
            )
            for amount in E.money_mentions(sentence):
                allowed = ({own_price} | exact) if own_price is not None else supported
                if not E.near(amount, allowed):
                    reasons.append(
                        Reason(
                            "unsupported_price",
                            "accuracy",
                            f"{amount:g} yuan is not a price, promotion figure or tool result",
                        )
                    )
        percents = E.supported_percents(case, reply, self.catalogue, trajectory)
        for pct in E.percent_off_mentions(reply):
            if not E.near(pct, percents):
                reasons.append(
                    Reason(
                        "invented_discount", "accuracy", f"{pct:g}% off is offered by no promotion"
                    )
                )
        tool_text = E.tool_result_text(trajectory).lower()
        for phrase in E.freebie_mentions(reply):
            if phrase.lower() not in tool_text:
                reasons.append(
                    Reason(
                        "invented_discount", "accuracy", f"'{phrase}' is offered by no promotion"
                    )
                )
        codes = {p.code for p in self.catalogue.promotions if p.kind == "coupon"}
        for code in E.coupon_codes(reply):
            if code not in codes:
                reasons.append(
                    Reason("unknown_coupon", "accuracy", f"coupon {code} does not exist")
                )
        for link in E.link_mentions(reply):
            if self.catalogue.product(link) is None:
                reasons.append(Reason("unknown_link", "accuracy", f"there is no link #{link}"))
        claim = E.stock_claim(reply)
        if claim:
            links = [x for x in E.link_mentions(reply) if self.catalogue.product(x)] or list(
                case.get("products") or []
            )
            stocks = [self.catalogue.product(x).stock for x in links if self.catalogue.product(x)]
            if stocks and claim == "out" and all(s > 0 for s in stocks):
                reasons.append(
                    Reason("wrong_stock", "accuracy", f"says sold out but stock is {stocks}")
                )
            if stocks and claim == "in" and all(s == 0 for s in stocks):
                reasons.append(
                    Reason("wrong_stock", "accuracy", "says in stock but it is sold out")
                )
            counts = E.stock_counts(reply)
            if stocks and counts and not any(c in stocks for c in counts):
                reasons.append(
                    Reason("wrong_stock", "accuracy", f"says {counts} left, stock is {stocks}")
                )
        for claim_spec in gold.get("forbidden_claims", []):
            for pattern in claim_spec.get("patterns", []):
                if re.search(pattern, reply):
                    reasons.append(
                        Reason(
                            "forbidden_claim",
                            "accuracy",
                            f"{claim_spec['id']}: {claim_spec['text']}",
                        )
                    )
                    break
        return reasons

    # --- effectiveness --------------------------------------------------------------
    def _on_topic(self, case: dict, reply: str) -> bool:
        links = E.link_mentions(reply)
        scope = set(case.get("products") or [])
        room = case.get("room") or {}
        if room.get("current_link_id"):
            scope.add(room["current_link_id"])
        if links & scope:
            return True
        low = reply.lower()
        for link in scope:
            product = self.catalogue.product(link)
            if product and (product.name.lower() in low or product.name.split()[-1].lower() in low):
                return True
        comment_words = set()
        for comment in case.get("comments", []):
            text = comment if isinstance(comment, str) else comment.get("text", "")
            comment_words |= E.content_words(text)
        return bool(comment_words & E.content_words(reply))

    def _effectiveness(
        self, case: dict, reply: str, route: str
    ) -> tuple[float, float | None, list[Reason]]:
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
        reasons: list[Reason] = []
        score = 1.0
        fact_share = None
        if facts:
            money, links = E.money_mentions(reply), E.link_mentions(reply)
            nums = E.numbers(E.strip_link_mentions(reply))
            missing = [f for f in facts if not _fact_present(f, reply, money, nums, links)]
            fact_share = 1 - len(missing) / len(facts)
            if missing:
                detail = "; ".join(f["text"] for f in missing)
                if self._on_topic(case, reply):
                    score = 0.5
                    reasons.append(Reason("missing_required_fact", "effectiveness", detail))
                else:
                    score = 0.0
                    reasons.append(
                        Reason("vague", "effectiveness", f"no concrete answer ({detail})")
                    )
        if len(reply) > self.max_reply_chars:
            score = min(score, 0.5)
            reasons.append(
                Reason(
                    "over_long",
                    "effectiveness",
                    f"{len(reply)} characters, the Harness allows {self.max_reply_chars}",
                )
            )
        return score, fact_share, reasons

    # --- trajectory -----------------------------------------------------------------
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

        calls = [c for c in trajectory.get("tool_calls", []) if c.get("name") != "load_skill"]
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

    # --- the verdict ----------------------------------------------------------------
    def judge(
        self, *, case: dict, reply: str, route: str = "public", trajectory: dict | None = None
    ) -> Verdict:
        reply = reply or ""
        acc_reasons = self._accuracy(case, reply, route, trajectory)
        eff, fact_share, eff_reasons = self._effectiveness(case, reply, route)
        gold_public = (case.get("gold") or {}).get("route", "public") != "silent"
        if (
            trajectory is not None
            and trajectory.get("outcome") == "fallback"
            and gold_public
            and eff > 0
        ):
            # the runtime's conservative stand-in ("let me check ..."), not an answer
            eff = 0.0
            eff_reasons.append(
                Reason(
                    "fallback_reply",
                    "effectiveness",
                    trajectory.get("outcome_reason", "the agent fell back"),
                )
            )
        accuracy = 0 if acc_reasons else 1
        reasons = acc_reasons + [
            r for r in eff_reasons if r.code != "spoke_when_silent" or not acc_reasons
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
