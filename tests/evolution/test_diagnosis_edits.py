"""Structured Harness edits: each one patches only what it names and the result validates."""

import pytest

from evaluation.diagnosis.edits import (
    AddHook,
    AddRefusalExclusion,
    AddSkillRule,
    ChangeSkillRule,
    EditError,
    RequireToolCall,
    SetConstraint,
    TightenHook,
    apply_edits,
    edit_from_dict,
)
from harness import demo_harness_dir, load_mapping, read_dir


@pytest.fixture(scope="module")
def files():
    files, problems = read_dir(demo_harness_dir())
    assert not problems
    return files


def changed_lines(before: str, after: str) -> tuple[set[str], set[str]]:
    a, b = before.split("\n"), after.split("\n")
    return set(a) - set(b), set(b) - set(a)


def test_add_rule_lands_in_its_section_and_parses(files):
    new, bundle = apply_edits(
        files,
        [
            AddSkillRule(
                skill="item_qa",
                rule_id="quote-link",
                text="Always say the link number.",
                section="What to say",
            )
        ],
    )
    rule = bundle.skills["item_qa"].rule("quote-link")
    assert rule is not None and rule.section == "What to say"
    removed, added = changed_lines(files["skills/item_qa/SKILL.md"], new["skills/item_qa/SKILL.md"])
    assert removed == set() and added == {"- Always say the link number. {#quote-link}"}


def test_change_and_remove_rule_keep_other_rules(files):
    new, bundle = apply_edits(
        files,
        [
            ChangeSkillRule(skill="item_qa", rule_id="price-format", text="Say prices in yuan."),
            ChangeSkillRule(skill="refusal", rule_id="polite-no", text=""),
        ],
    )
    assert bundle.skills["item_qa"].rule("price-format").text == "Say prices in yuan."
    assert bundle.skills["refusal"].rule("polite-no") is None
    before = load_mapping(files)
    assert len(bundle.skills["refusal"].rules) == len(before.skills["refusal"].rules) - 1
    assert len(bundle.skills["item_qa"].rules) == len(before.skills["item_qa"].rules)


def test_hook_edits_touch_only_their_item(files):
    stripped = {**files, "hooks.yaml": files["hooks.yaml"]}
    new, bundle = apply_edits(
        stripped,
        [
            TightenHook(hook_id="tool-budget", params={"max_calls": 5}),
            RequireToolCall(
                claim="price", tools=["get_product_info_by_link_id"], hook_id="price-again"
            ),
        ],
    )
    hooks = {h.id: h for h in bundle.hooks}
    assert hooks["tool-budget"].params == {"max_calls": 5, "block_repeats": True}
    assert hooks["price-again"].type == "require_tool_before_claim"
    assert hooks["price-again"].params["claim"] == "price"
    removed, _ = changed_lines(files["hooks.yaml"], new["hooks.yaml"])
    assert all("max_calls" in line or "tool result, or used too many" in line for line in removed)


def test_constraint_and_refusal_exclusion(files):
    _, bundle = apply_edits(
        files,
        [
            SetConstraint(name="max_reply_chars", value=180),
            AddRefusalExclusion(
                rule_id="shipping-is-legit", text="Do not refuse shipping questions."
            ),
        ],
    )
    assert bundle.constraints["max_reply_chars"] == 180
    assert bundle.skills["refusal"].rule("shipping-is-legit") is not None


@pytest.mark.parametrize(
    "edit, message",
    [
        (ChangeSkillRule(skill="item_qa", rule_id="nope", text="x"), "has no rule {#nope}"),
        (
            AddSkillRule(skill="ghost", rule_id="r", text="x"),
            "skills/ghost/SKILL.md is not in the Harness",
        ),
        (AddSkillRule(skill="item_qa", rule_id="price-format", text="x"), "already has rule"),
        (AddSkillRule(skill="item_qa", rule_id="Bad Id", text="x"), "rule_id 'Bad Id'"),
        (
            AddHook(hook={"id": "reply-length", "event": "stop", "type": "max_length"}),
            "already has a hook",
        ),
        (TightenHook(hook_id="ghost"), "has no hook 'ghost'"),
        (SetConstraint(name="max_reply_chars", value="short"), "value must be a number"),
    ],
)
def test_bad_edits_name_what_is_wrong(files, edit, message):
    with pytest.raises(EditError, match=r".*" + __import__("re").escape(message)):
        apply_edits(files, [edit])


def test_edit_that_breaks_validation_is_refused(files):
    bad_hook = AddHook(hook={"id": "x", "event": "stop", "type": "no_such_hook_type"})
    with pytest.raises(EditError, match="does not validate: hooks.yaml:"):
        apply_edits(files, [bad_hook])


def test_edits_round_trip_through_json():
    edit = RequireToolCall(claim="stock", tools=["get_product_info_by_link_id"])
    assert edit_from_dict(edit.to_dict()) == edit
    with pytest.raises(
        EditError, match="op: 'rewrite_everything' is not an edit; valid: add_skill_rule"
    ):
        edit_from_dict({"op": "rewrite_everything"})
    with pytest.raises(EditError, match="unknown field"):
        edit_from_dict({"op": "set_constraint", "name": "max_rounds", "value": 3, "colour": "red"})
