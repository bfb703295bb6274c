"""harness.text_edit: one reader of SKILL.md rules, edits that keep the rest of a file byte for
byte."""

import difflib

import pytest

from harness import demo_harness_dir, load_mapping, read_dir
from harness.hooks import parse_hooks
from harness.skills import parse_skill
from harness.text_edit import (
    TextEditError,
    hook_action_problem,
    hook_event_problem,
    id_problem,
    insert_hook,
    insert_rule,
    new_skill_text,
    read_hooks,
    replace_hook,
    replace_rule,
    scan_rules,
    skill_kind_problem,
    skill_name_problem,
)

SKILL = """---
name: sizes
description: Size advice.
kind: reply
---
# Sizes

Some prose that is not a rule.

## Before you answer

- Read the size chart first. {#chart-first}
- Ask for height and weight
  when the viewer gave neither. {#ask-height}

## Never

* Never guess a size.

```
- not a rule, inside code
```
"""

HOOKS_NOT_LAST = """# Hooks of the demo, hand-written
hooks:
  # input checks first
  - id: input-validity
    event: input
    type: input_validity
    params: {min_chars: 1, max_chars: 500}   # keep this flow mapping
    on_fail: {action: suppress}

  - id: reply-length
    event: stop
    type: max_length
    params: {max_chars: 220}

# the retry policy comes after the hooks here
retry:
  max_retries: 2   # two is enough
  on_exhausted: fallback
"""

NEW_HOOK = {
    "id": "short-replies",
    "event": "stop",
    "type": "max_length",
    "params": {"max_chars": 120},
    "on_fail": {"action": "retry", "message": "Shorter."},
}


def inserted(before: str, after: str) -> list[str]:
    """The lines `after` adds to `before`, checking that every other line is kept, byte for byte."""
    a, b = before.split("\n"), after.split("\n")
    ops = [
        op
        for op in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    assert len(ops) == 1 and ops[0][0] == "insert", ops
    return b[ops[0][3] : ops[0][4]]


def body_of(text: str) -> str:
    return text.split("---\n", 2)[2]


def test_rules_are_read_once_with_ids_sections_and_continuations():
    rules = scan_rules(body_of(SKILL))
    assert [(r.id, r.section, r.explicit_id) for r in rules] == [
        ("chart-first", "Before you answer", True),
        ("ask-height", "Before you answer", True),
        (rules[2].id, "Never", False),
    ]
    assert rules[1].text == "Ask for height and weight when the viewer gave neither."
    assert rules[2].id.startswith("r-") and rules[2].marker == "*"
    lines = body_of(SKILL).split("\n")
    assert lines[rules[1].start].startswith("- Ask") and lines[rules[1].end - 1].endswith(
        "{#ask-height}"
    )
    assert all("inside code" not in r.text for r in rules)


def test_skills_parse_rules_through_the_same_reader():
    skill, problems = parse_skill(SKILL, path="skills/sizes/SKILL.md")
    assert problems == []
    assert [r.id for r in skill.rules] == [r.id for r in scan_rules(body_of(SKILL))]
    assert (
        skill.rule("ask-height").line == SKILL.split("\n").index("- Ask for height and weight") + 1
    )


def test_a_rule_inserted_into_a_middle_section_keeps_the_rest_byte_identical():
    after = insert_rule(
        SKILL, rule_id="chart-units", text="Say  sizes\nin cm.", section="Before you answer"
    )
    assert inserted(SKILL, after) == ["- Say sizes in cm. {#chart-units}"]
    skill, problems = parse_skill(after, path="skills/sizes/SKILL.md")
    assert problems == [] and skill.rule("chart-units").section == "Before you answer"
    assert [r.id for r in skill.rules].index("chart-units") == 2  # after ask-height, before Never


def test_a_rule_for_a_new_section_goes_at_the_end_under_its_heading():
    after = insert_rule(SKILL, rule_id="thanks", text="Thank the viewer.", section="Closing")
    added = inserted(SKILL, after)
    assert added[added.index("## Closing") :][:3] == [
        "## Closing",
        "",
        "- Thank the viewer. {#thanks}",
    ]
    assert parse_skill(after, path="skills/sizes/SKILL.md")[0].rule("thanks").section == "Closing"


def test_a_rule_under_an_existing_heading_without_rules():
    text = SKILL.replace("* Never guess a size.\n", "")
    after = insert_rule(text, rule_id="no-guess", text="Never guess.", section="Never")
    assert "- Never guess. {#no-guess}" in inserted(text, after)
    assert after.count("## Never") == 1
    assert parse_skill(after, path="skills/sizes/SKILL.md")[0].rule("no-guess").section == "Never"


def test_replace_and_remove_a_rule_touch_only_its_lines():
    after = replace_rule(SKILL, rule_id="ask-height", text="Ask for height.")
    assert (
        "- Ask for height. {#ask-height}" in after and "when the viewer gave neither" not in after
    )
    assert after.replace("- Ask for height. {#ask-height}\n", "") == SKILL.replace(
        "- Ask for height and weight\n  when the viewer gave neither. {#ask-height}\n", ""
    )
    removed = replace_rule(SKILL, rule_id="chart-first", text="")
    assert removed == SKILL.replace("- Read the size chart first. {#chart-first}\n", "")


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: insert_rule(SKILL, rule_id="chart-first", text="x"),
            "already has rule {#chart-first}",
        ),
        (lambda: insert_rule(SKILL, rule_id="Bad Id", text="x"), "'Bad Id' is not an id"),
        (lambda: insert_rule(SKILL, rule_id="ok", text="  "), "text: say what the rule requires"),
        (
            lambda: insert_rule("no front matter", rule_id="ok", text="x"),
            "must start with a '---' line",
        ),
        (
            lambda: replace_rule(SKILL, rule_id="ghost", text="x"),
            "no rule {#ghost} (rules: chart-first, ask-height, r-",
        ),
    ],
)
def test_rule_edits_refuse_with_what_would_be_valid(call, message):
    with pytest.raises(TextEditError, match=".*" + __import__("re").escape(message)):
        call()


def test_a_hook_inserted_when_hooks_is_not_the_last_key_keeps_the_rest_byte_identical():
    after = insert_hook(HOOKS_NOT_LAST, NEW_HOOK)
    added = inserted(HOOKS_NOT_LAST, after)
    assert added[0] == "  - id: short-replies" and all(
        line.startswith("    ") for line in added[1:]
    )
    assert after.index("short-replies") < after.index("# the retry policy")
    hooks, problems = parse_hooks(after)
    assert problems == [] and [h.id for h in hooks.hooks] == [
        "input-validity",
        "reply-length",
        "short-replies",
    ]
    assert hooks.retry.max_retries == 2


@pytest.mark.parametrize(
    "text, indent",
    [
        ("hooks:\n- id: a\n  event: stop\n  type: max_length\n  params: {max_chars: 50}\n", ""),
        ("retry:\n  max_retries: 1\nhooks: []   # none yet\n", "  "),
        ("hooks:\n", "  "),
    ],
)
def test_hook_insertion_in_other_layouts(text, indent):
    after = insert_hook(text, NEW_HOOK)
    assert f"\n{indent}- id: short-replies\n" in after
    assert read_hooks(after)[-1] == NEW_HOOK
    assert "# none yet" in after or "none yet" not in text


@pytest.mark.parametrize(
    "text, hook, message",
    [
        (
            HOOKS_NOT_LAST,
            {**NEW_HOOK, "id": "reply-length"},
            "already has a hook with id 'reply-length'",
        ),
        (HOOKS_NOT_LAST, {**NEW_HOOK, "id": "Bad Id"}, "'Bad Id' is not an id"),
        ("retry:\n  max_retries: 1\n", NEW_HOOK, "has no top-level 'hooks:' list"),
        (
            "hooks: [{id: a, event: stop, type: max_length}]\n",
            NEW_HOOK,
            "line 1: the hooks list is written in flow style",
        ),
        ("hooks:\n  - id: [\n", NEW_HOOK, "hooks.yaml:3: (syntax): invalid YAML"),
    ],
)
def test_hook_insertion_refuses_with_a_clear_message(text, hook, message):
    with pytest.raises(TextEditError, match=".*" + __import__("re").escape(message)):
        insert_hook(text, hook)


def test_replacing_a_hook_keeps_its_neighbours_and_comments():
    item = {
        "id": "input-validity",
        "event": "input",
        "type": "input_validity",
        "params": {"min_chars": 2, "max_chars": 500},
        "on_fail": {"action": "suppress"},
    }
    after = replace_hook(HOOKS_NOT_LAST, "input-validity", item)
    assert "  # input checks first" in after and "  - id: reply-length" in after
    assert after.split("  - id: reply-length")[1] == HOOKS_NOT_LAST.split("  - id: reply-length")[1]
    assert read_hooks(after)[0]["params"]["min_chars"] == 2
    with pytest.raises(
        TextEditError, match="has no hook 'ghost' \\(hooks: input-validity, reply-length\\)"
    ):
        replace_hook(HOOKS_NOT_LAST, "ghost", item)


def test_the_demo_harness_takes_both_insertions_and_still_validates():
    files, problems = read_dir(demo_harness_dir())
    assert not problems
    files = {
        **files,
        "hooks.yaml": insert_hook(files["hooks.yaml"], NEW_HOOK),
        "skills/item_qa/SKILL.md": insert_rule(
            files["skills/item_qa/SKILL.md"],
            rule_id="link-number",
            text="Say the link number.",
            section="What to say",
        ),
    }
    bundle = load_mapping(files)
    assert "short-replies" in {h.id for h in bundle.hooks}
    assert bundle.skills["item_qa"].rule("link-number").section == "What to say"


@pytest.mark.parametrize("name", ["café", "Size", "size advice", "-size", "a" * 65, "٣", ""])
def test_one_name_validator_refuses_what_the_format_refuses(name):
    assert skill_name_problem(name) is not None
    text = SKILL.replace("name: sizes", f"name: {name!r}" if name else "name: ''")
    assert parse_skill(text, path="SKILL.md")[0] is None  # the skill's schema refuses it too


def test_validators_accept_the_format_and_name_the_valid_choices():
    assert skill_name_problem("size_advice") is None and id_problem("price-needs-tool.v2") is None
    assert "reply or strategy" in skill_kind_problem("answer")
    assert skill_kind_problem("strategy") is None
    assert (
        hook_action_problem("explode")
        == "'explode' is not an action; choose retry, fallback or suppress"
    )
    assert hook_event_problem("stop") is None and "before_tool" in hook_event_problem("later")
    assert "'Bad Id' is not an id" in id_problem("Bad Id")


def test_the_skill_template_is_valid_for_any_description():
    text = new_skill_text(
        name="size_advice", kind="reply", description="Sizes: from the chart,\n  #1 rule"
    )
    skill, problems = parse_skill(text, path="skills/size_advice/SKILL.md")
    assert problems == [] and skill.description == "Sizes: from the chart, #1 rule"
    assert skill.kind == "reply" and len(skill.rules) == 1
    assert parse_skill(new_skill_text(name="x", kind="strategy"), path="skills/x/SKILL.md")[
        0
    ].description
    with pytest.raises(TextEditError, match="name: 'café' is not a skill name"):
        new_skill_text(name="café", kind="reply")
    with pytest.raises(TextEditError, match="kind: 'answer'"):
        new_skill_text(name="x", kind="answer")


def test_augmentation_and_the_validator_see_the_same_rules():
    from harness.augment.editable import Body

    text = (
        "---\nname: x\ndescription: d\nkind: reply\n---\n- Say the "
        "price.\n    ```\n    code\n    ```\n- Say the link. {#link}\n"
    )
    skill, problems = parse_skill(text, path="SKILL.md")
    assert problems == []
    assert [(r.id, r.text) for r in Body.parse(body_of(text)).rules()] == [
        (r.id, r.text) for r in skill.rules
    ]
