"""Renamed names follow into free text and matchers, and plain words stay words."""

from __future__ import annotations

import re

from harness.augment.references import referenced, rename_in_matcher, rename_in_text


def test_identifiers_are_renamed_as_whole_tokens_only():
    renames = {"change_order": "confirm_move", "search_faq": "kb_lookup"}
    text = (
        "After change_presentation_order, load change_order; call search_faq "
        "(not search_faq_v2) and keep {#change-order-id}."
    )
    assert rename_in_text(text, renames) == (
        "After change_presentation_order, load confirm_move; call kb_lookup "
        "(not search_faq_v2) and keep {#change-order-id}."
    )


def test_plain_word_skill_names_are_renamed_only_where_they_are_references():
    renames = {"greet": "welcome_viewers", "clarification": "ask_back"}
    text = (
        "When many viewers join, greet them together. If unsure, load clarification; "
        'use the `greet` skill or load_skill("greet"). Clarification helps.'
    )
    assert rename_in_text(text, renames) == (
        "When many viewers join, greet them together. If unsure, load ask_back; "
        'use the `welcome_viewers` skill or load_skill("welcome_viewers"). Clarification helps.'
    )
    assert referenced(text, ["greet", "clarification", "item_qa"]) == {"greet", "clarification"}


def test_matchers_keep_matching_the_same_tools_after_renaming():
    before = ["get_price", "get_stock", "stay_silent"]
    after = {"get_price": "fetch_price", "get_stock": "get_stock", "stay_silent": "mute"}
    renames = {k: v for k, v in after.items() if k != v}
    alternation = rename_in_matcher("get_price|stay_silent", renames, before=before, after=after)
    assert alternation == "fetch_price|mute"
    wildcard = rename_in_matcher("get_.*", renames, before=before, after=after)
    assert sorted(n for n in after.values() if re.fullmatch(wildcard, n)) == [
        "fetch_price",
        "get_stock",
    ]
