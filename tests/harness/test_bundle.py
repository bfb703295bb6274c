"""Loading, dumping, digests and rules of Harness bundles."""

import pytest

from harness import (
    HarnessValidationError,
    demo_harness_dir,
    files_digest,
    load_dir,
    load_mapping,
    validate_mapping,
)
from harness.diff import diff_bundles
from harness.prompt import render_template
from harness.text_edit import rule_auto_id


@pytest.fixture(scope="module")
def demo():
    return load_dir(demo_harness_dir())


def test_load_dump_load_round_trips_to_an_identical_digest(demo, tmp_path):
    demo.dump_dir(tmp_path / "copy")
    again = load_dir(tmp_path / "copy")
    assert again.digest == demo.digest
    assert load_mapping(again.to_mapping()).digest == demo.digest


def test_digest_ignores_line_endings_but_not_content(demo):
    crlf = {p: t.replace("\n", "\r\n") for p, t in demo.files.items()}
    assert load_mapping(crlf).digest == demo.digest
    changed = dict(demo.files)
    changed["prompt.yaml"] = changed["prompt.yaml"].replace("Mia", "Max")
    assert files_digest(changed) != demo.digest


def test_demo_has_the_skills_of_the_spec(demo):
    reply = {
        "item_qa",
        "chillchat",
        "aftersale",
        "clarification",
        "faq_reply",
        "refusal",
        "thanks",
        "greet",
    }
    strategy = {
        "tool_strategy_benefit",
        "tool_strategy_compare",
        "tool_strategy_multi",
        "tool_strategy_switch",
        "general_discount",
        "change_order",
    }
    assert {s.name for s in demo.reply_skills()} == reply
    assert {s.name for s in demo.strategy_skills()} == strategy
    assert demo.prompt.max_rounds == 4
    assert demo.prompt.tool_timeout_s == 5
    assert demo.prompt.trajectory_budget_s == 10
    assert [t.name for t in demo.tool_registry.by_role("load_skill")] == ["load_skill"]
    events = {h.event for h in demo.hooks}
    assert events == {"input", "before_model", "after_model", "before_tool", "after_tool", "stop"}


def test_rules_have_stable_ids_and_render_without_markers(demo):
    skill = demo.skills["item_qa"]
    rule = skill.rule("fetch-before-facts")
    assert rule is not None and rule.section == "Before you answer"
    assert "get_product_info_by_link_id" in rule.text and "{#" not in rule.text
    assert "{#" not in skill.render_body()
    assert "Call get_product_info_by_link_id for that link" in skill.render_body()


def test_rules_without_ids_get_ids_that_survive_edits_of_other_rules(demo):
    base = demo.files["skills/greet/SKILL.md"]
    plain = base.replace(" {#short}", "").replace(" {#group-joins}", "")
    b1 = demo.with_files({"skills/greet/SKILL.md": plain})
    edited = plain.replace("Keep it to one sentence.", "Keep it to one short sentence.")
    b2 = demo.with_files({"skills/greet/SKILL.md": edited})
    ids1 = [r.id for r in b1.skills["greet"].rules]
    ids2 = [r.id for r in b2.skills["greet"].rules]
    assert ids1[0] == ids2[0] == "welcome-and-current"
    assert (
        ids1[2]
        == ids2[2]
        == rule_auto_id("When many viewers join at once, greet them together, not one by one.")
    )
    assert ids1[1] != ids2[1]


def test_load_mapping_reports_every_problem_and_returns_nothing(demo):
    files = dict(demo.files)
    files["tools.yaml"] = files["tools.yaml"].replace("timeout_s: 5", "timeout_s: -1", 1)
    files["skills/greet/SKILL.md"] = files["skills/greet/SKILL.md"].replace(
        "kind: reply", "kind: replies"
    )
    with pytest.raises(HarnessValidationError) as err:
        load_mapping(files)
    fields = {(p.file, p.field) for p in err.value.problems}
    assert ("skills/greet/SKILL.md", "kind") in fields
    assert ("tools.yaml", "tools[6].timeout_s") in fields
    assert validate_mapping(files) == err.value.problems


def test_with_files_revalidates(demo):
    with pytest.raises(HarnessValidationError):
        demo.with_files({"hooks.yaml": None})


def test_template_slots_and_literal_braces():
    assert render_template("{{x}} {a} {missing}", {"a": "1"}) == "{x} 1 "


def test_prompt_pipeline_renders_blocks_and_skips_empty_optional_ones(demo):
    rendered = dict(
        (b.id, text)
        for b, text in demo.prompt.render({"skill_list": "- item_qa", "room_status": "link 1"})
    )
    assert "products" not in rendered and "faq" not in rendered
    assert "You are Mia, the AI host of the Bright Basket Live live stream" in rendered["persona"]
    assert "under 220 characters" in rendered["persona"]
    assert '<tool_call>{"name": "<tool name>"' not in rendered.get("tools", "")


def test_diff_summary_names_what_changed(demo):
    files = dict(demo.files)
    files["hooks.yaml"] = files["hooks.yaml"].replace("max_calls: 8", "max_calls: 6")
    files["skills/thanks/SKILL.md"] = files["skills/thanks/SKILL.md"].rstrip() + (
        "\n- Never mention the gift's value. {#no-gift-value}\n"
    )
    del files["skills/greet/SKILL.md"]
    files["hooks.yaml"] = files["hooks.yaml"]
    new = load_mapping(files)
    summary = diff_bundles(demo, new).summary
    assert "skill removed: greet" in summary
    assert "skill thanks: rule added {#no-gift-value}: Never mention the gift's value." in summary
    assert "hook tool-budget: params changed" in summary
