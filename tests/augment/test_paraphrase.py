"""Paraphrases: real variety, and never a changed number, negation or referenced name."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.augment import OfflineParaphraser, checked_rewrite, violations
from harness.augment.preserve import negation_count, numbers

NAMES = [
    "get_product_info_by_link_id",
    "calculate_promotion",
    "search_faq",
    "load_skill",
    "stay_silent",
    "item_qa",
    "clarification",
    "change_order",
    "fetchItemDetails_v2",
]

# Rules written to tempt a careless rewriter: numbers in words and digits, stacked
# negations, names next to synonyms of themselves, placeholders, quotes and markup.
ADVERSARIAL = [
    "Never promise a refund, compensation or a delivery date yourself.",
    "Do not call calculate_promotion more than 2 times; never guess the final price.",
    "If stock is under 20, say it is running low; if it is 0, say it is sold out.",
    "Call get_product_info_by_link_id before stating any price, and not after.",
    "Keep the reply under {max_reply_chars} characters and finish within {max_rounds} rounds.",
    "Answer in one or two sentences; no more than three links, never 100% claims.",
    'When the viewer asks "is it free?", do not say yes unless search_faq says so.',
    "Load clarification instead of guessing when two products fit; don't load item_qa.",
    "Quote 48 hours, 7 days and 1.5 kg exactly as written, without rounding.",
    "Never ask for phone numbers; nobody may see addresses in the public chat.",
    'Write <tool_call>{"name": "stay_silent"}</tool_call> only for spam, not for questions.',
    "After moving a product, load change_order to confirm; call fetchItemDetails_v2 once.",
    "Give a 10% discount only if calculate_promotion returned it; otherwise say none applies.",
    "You must never mention a coupon that no tool returned in this request.",
]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), index=st.integers(0, len(ADVERSARIAL) - 1))
def test_checked_rewrite_keeps_numbers_negations_and_names(seed, index):
    rule = ADVERSARIAL[index]
    result = checked_rewrite(rule, rng=random.Random(seed), names=NAMES)
    assert violations(rule, result.text, names=NAMES) == []
    assert numbers(result.text) == numbers(rule)
    assert negation_count(result.text) == negation_count(rule)
    for name in NAMES:
        assert result.text.count(name) == rule.count(name)


def test_adversarial_rules_do_get_rewritten():
    changed = sum(
        checked_rewrite(rule, rng=random.Random(i), names=NAMES).changed
        for i, rule in enumerate(ADVERSARIAL * 3)
    )
    assert changed >= len(ADVERSARIAL) * 3 * 0.8


def test_variety_is_compositional_not_a_short_list():
    rule = (
        "Call get_product_info_by_link_id for that link before stating any spec, price, "
        "stock level or promotion."
    )
    outputs = {checked_rewrite(rule, rng=random.Random(s), names=NAMES).text for s in range(200)}
    assert len(outputs) >= 120
    openings = {o.split()[0] for o in outputs}
    assert len(openings) >= 8  # modal frames, passives, moved clauses, framings


def test_clause_moves_and_mood_alternations_happen():
    rule = "If the change failed, say the host will show it soon."
    outs = {
        OfflineParaphraser().rewrite(rule, rng=random.Random(s), names=NAMES) for s in range(80)
    }
    assert any(o.startswith("If") or o.startswith("When") for o in outs)
    assert any(" if the " in o for o in outs)  # the condition moved to the back
    assert any("should" in o or "must" in o or "Make sure" in o for o in outs)


def test_same_rng_state_gives_the_same_rewrite():
    rule = ADVERSARIAL[3]
    a = checked_rewrite(rule, rng=random.Random(5), names=NAMES).text
    b = checked_rewrite(rule, rng=random.Random(5), names=NAMES).text
    assert a == b


def test_violations_explain_what_broke():
    assert "numbers changed" in violations("Wait 48 hours.", "Wait 24 hours.")[0]
    assert "negations changed" in violations("Never lie.", "Always lie.")[0]
    assert "referenced names" in violations("Call search_faq.", "Call search.", names=NAMES)[0]
    assert "placeholders" in violations("Under {limit}.", "Under the limit.")[0]
    assert violations("Do not guess.", "Don't guess.") == []


class _BreaksNumbers:
    name = "broken"

    def rewrite(self, text, *, rng, names):
        return text.replace("48", "24")


def test_a_rewriter_that_breaks_constraints_is_refused():
    result = checked_rewrite(
        "Ship within 48 hours.", rng=random.Random(0), rewriter=_BreaksNumbers()
    )
    assert result.text == "Ship within 48 hours." and not result.changed
    assert result.rejected and "numbers changed" in result.rejected[0]


def test_hyphenated_words_and_noun_phrases_are_not_misparsed():
    text = "After-sales help: returns, exchanges and refunds. Use when the viewer is unhappy."
    for seed in range(60):
        out = checked_rewrite(text, rng=random.Random(seed), names=NAMES).text.lower()
        assert out.index("after-sales") < out.index("returns")
    noun_phrase = "The current link number and recent viewer actions before any model call."
    for seed in range(60):
        out = checked_rewrite(noun_phrase, rng=random.Random(seed), names=NAMES).text
        assert not out.startswith(("Rule:", "Policy:", "Note:", "Important:", "You "))
        assert "model call" in out  # "call" after a noun is a noun, not a verb to swap
