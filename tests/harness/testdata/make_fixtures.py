"""Writes the minimal valid bundle and the broken bundles used by the format tests.

Each broken bundle is the minimal bundle with exactly one kind of mistake, and
an ``expected.txt`` with the ``file:line: field`` of every problem validation
must report. Run ``python tests/harness/testdata/make_fixtures.py`` after
changing a fixture here; the directories are committed.
"""

import shutil
from pathlib import Path

HERE = Path(__file__).parent

MINIMAL = {
    "manifest.yaml": "format: harness-studio/v1\nname: minimal\nversion: '1'\n",
    "tools.yaml": """\
tools:
  - name: get_product_info_by_link_id
    description: Product at a link number.
    parameters:
      type: object
      properties:
        link_id: {type: integer, minimum: 1}
      required: [link_id]
    binding: {builtin: livestream.get_product_info}
  - name: load_skill
    description: Load a skill by name.
    parameters:
      type: object
      properties:
        name: {type: string}
      required: [name]
    binding: {builtin: flow.load_skill}
""",
    "prompt.yaml": """\
constraints:
  max_reply_chars: 200
  max_rounds: 4
  tool_timeout_s: 5
  trajectory_budget_s: 10
blocks:
  - id: persona
    template: |
      You are the host.
      Skills: {skill_list}
""",
    "hooks.yaml": """\
hooks:
  - id: reply-skill
    event: stop
    type: require_reply_skill
  - id: price-tool
    event: stop
    type: require_tool_before_claim
    params: {claim: price, tools: [get_product_info_by_link_id]}
""",
    "skills/item_qa/SKILL.md": """\
---
name: item_qa
description: Answer product questions.
kind: reply
allowed-tools: get_product_info_by_link_id
---
# Item Q&A

- Call get_product_info_by_link_id before stating a price. {#price-tool}
- Keep the reply short. {#short}
""",
}

# name: (changes {path: text or None}, expected "file:line: field" lines)
BROKEN = {
    "yaml-syntax": (
        {
            "tools.yaml": MINIMAL["tools.yaml"].replace(
                "    description: Product at a link number.", "    description: [Product at a link"
            )
        },
        ["tools.yaml:3: (syntax)"],
    ),  # the line of the unclosed bracket, not where the parser gave up
    "wrong-type": (
        {"prompt.yaml": MINIMAL["prompt.yaml"].replace("max_rounds: 4", "max_rounds: four")},
        ["prompt.yaml:3: constraints.max_rounds"],
    ),
    "constraint-out-of-range": (
        {"prompt.yaml": MINIMAL["prompt.yaml"].replace("max_rounds: 4", "max_rounds: 40")},
        ["prompt.yaml:3: constraints.max_rounds"],
    ),
    "unknown-hook-type": (
        {
            "hooks.yaml": MINIMAL["hooks.yaml"].replace(
                "type: require_reply_skill", "type: require_reply_skil"
            )
        },
        ["hooks.yaml:4: hooks[0].type"],
    ),
    "hook-wrong-event": (
        {
            "hooks.yaml": MINIMAL["hooks.yaml"].replace(
                "event: stop\n    type: require_reply_skill",
                "event: before_tool\n    type: require_reply_skill",
            )
        },
        ["hooks.yaml:3: hooks[0].event"],
    ),
    "duplicate-tool": (
        {
            "tools.yaml": MINIMAL["tools.yaml"].replace(
                "- name: load_skill", "- name: get_product_info_by_link_id"
            )
        },
        ["tools.yaml:10: tools[1].name"],
    ),
    "duplicate-rule-id": (
        {
            "skills/item_qa/SKILL.md": MINIMAL["skills/item_qa/SKILL.md"].replace(
                "{#short}", "{#price-tool}"
            )
        },
        ["skills/item_qa/SKILL.md:10: rule {#price-tool}"],
    ),
    "skill-name-mismatch": (
        {
            "skills/item_qa/SKILL.md": MINIMAL["skills/item_qa/SKILL.md"].replace(
                "name: item_qa", "name: item-qa"
            )
        },
        ["skills/item_qa/SKILL.md:2: name"],
    ),
    "no-front-matter": (
        {"skills/item_qa/SKILL.md": "# Item Q&A\n\n- Be nice.\n"},
        ["skills/item_qa/SKILL.md:1: (front matter)"],
    ),
    "front-matter-missing-field": (
        {
            "skills/item_qa/SKILL.md": MINIMAL["skills/item_qa/SKILL.md"].replace(
                "kind: reply\n", ""
            )
        },
        ["skills/item_qa/SKILL.md:2: kind"],
    ),
    "allowed-tools-unknown": (
        {
            "skills/item_qa/SKILL.md": MINIMAL["skills/item_qa/SKILL.md"].replace(
                "allowed-tools: get_product_info_by_link_id",
                "allowed-tools: get_product_info calculate_promotion",
            )
        },
        ["skills/item_qa/SKILL.md:5: allowed-tools", "skills/item_qa/SKILL.md:5: allowed-tools"],
    ),
    "hook-unknown-tool": (
        {
            "hooks.yaml": MINIMAL["hooks.yaml"].replace(
                "tools: [get_product_info_by_link_id]", "tools: [get_price]"
            )
        },
        ["hooks.yaml:8: hooks[1].params"],
    ),
    "hook-unknown-skill": (
        {
            "hooks.yaml": MINIMAL["hooks.yaml"].replace(
                "type: require_reply_skill",
                "type: require_reply_skill\n    params: {skills: [faq_reply]}",
            )
        },
        ["hooks.yaml:5: hooks[0].params"],
    ),
    "no-reply-skill": (
        {
            "skills/item_qa/SKILL.md": MINIMAL["skills/item_qa/SKILL.md"].replace(
                "kind: reply", "kind: strategy"
            )
        },
        ["skills/:0: (skills)"],
    ),
    "unknown-slot": (
        {"prompt.yaml": MINIMAL["prompt.yaml"].replace("{skill_list}", "{skills}")},
        ["prompt.yaml:10: blocks[0].template"],
    ),
    "undeclared-mcp-server": (
        {
            "tools.yaml": MINIMAL["tools.yaml"].replace(
                "binding: {builtin: livestream.get_product_info}",
                "binding: {mcp: marketing/get_product}",
            )
        },
        ["tools.yaml:9: tools[0].binding.mcp"],
    ),
    "unknown-builtin": (
        {
            "tools.yaml": MINIMAL["tools.yaml"].replace(
                "livestream.get_product_info", "livestream.get_product"
            )
        },
        ["tools.yaml:9: tools[0].binding.builtin"],
    ),
    "missing-file": ({"hooks.yaml": None}, ["hooks.yaml:0: (file)"]),
    "script-in-bundle": (
        {"skills/item_qa/scripts/run.py": 'print("scripts never run")\n'},
        ["skills/item_qa/scripts/run.py:0: (file)"],
    ),
    "bad-parameter-schema": (
        {
            "tools.yaml": MINIMAL["tools.yaml"].replace(
                "link_id: {type: integer, minimum: 1}", "link_id: {type: integr, minimum: 1}"
            )
        },
        ["tools.yaml:4: tools[0].parameters"],
    ),
    "bad-matcher-regex": (
        {
            "hooks.yaml": MINIMAL["hooks.yaml"]
            + """\
  - id: shelf
    event: before_tool
    type: link_id_on_shelf
    matcher: "get_product_info_by_link_id|(load"
    params: {argument: link_id}
"""
        },
        ["hooks.yaml:12: hooks[2].matcher"],
    ),
    "duplicate-yaml-key": (
        {"manifest.yaml": MINIMAL["manifest.yaml"] + "name: other\n"},
        ["manifest.yaml:4: name"],
    ),
    "input-hook-retry": (
        {
            "hooks.yaml": MINIMAL["hooks.yaml"]
            + """\
  - id: validity
    event: input
    type: input_validity
    on_fail: {action: retry}
"""
        },
        ["hooks.yaml:12: hooks[2].on_fail.action"],
    ),
    "unknown-field": (
        {"manifest.yaml": MINIMAL["manifest.yaml"] + "colour: blue\n"},
        ["manifest.yaml:4: (top level)"],
    ),
}


def write(root: Path, files: dict) -> None:
    if root.exists():
        shutil.rmtree(root)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


if __name__ == "__main__":
    write(HERE / "minimal", MINIMAL)
    for name, (changes, expected) in BROKEN.items():
        files = dict(MINIMAL)
        for rel, text in changes.items():
            if text is None:
                files.pop(rel)
            else:
                files[rel] = text
        write(HERE / "broken" / name, files)
        (HERE / "broken" / name / ".expected").write_text("\n".join(expected) + "\n")
    print(f"wrote minimal + {len(BROKEN)} broken bundles")
