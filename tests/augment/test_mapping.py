"""The mapping: JSON round trip, remapped cases and trajectories, composition."""

from __future__ import annotations

import json

import pytest

from harness.augment import (
    HarnessMapping,
    MappingError,
    augment_bundle,
    transform_skill_identifiers,
    transform_tools,
)


def _mapping() -> HarnessMapping:
    return HarnessMapping(
        skills={"item_qa": "product_answers"},
        tools={"get_product_info_by_link_id": "fetchItem", "load_skill": "open_playbook"},
        parameters={"get_product_info_by_link_id": {"link_id": "slot"}},
        masked_skills=["greet"],
        skill_arguments={"open_playbook": "name"},
    )


def test_json_round_trip_and_unknown_fields_are_named():
    m = _mapping()
    again = HarnessMapping.from_dict(json.loads(m.to_json()))
    assert again == m
    with pytest.raises(MappingError, match="unknown mapping field"):
        HarnessMapping.from_dict({**m.to_dict(), "colour": "red"})


def test_remap_case_renames_gold_skills_tools_arguments_and_order(gold_cases):
    case = next(c for c in gold_cases if c["id"] == "price-3")
    out = _mapping().remap_case(case)
    gold = out["gold"]
    assert gold["reply_skills"] == ["product_answers"]
    assert gold["tool_calls"][0] == {"name": "fetchItem", "arguments": {"slot": 3}}
    assert gold["tool_calls"][1] == {
        "name": "open_playbook",
        "arguments": {"name": "product_answers"},
    }
    assert gold["tool_order"] == ["fetchItem"]
    assert case["gold"]["reply_skills"] == ["item_qa"]  # the input is untouched


def test_a_masked_gold_skill_is_an_error_not_a_silent_relabel(gold_cases):
    case = next(c for c in gold_cases if c["id"] == "greet-amy")
    with pytest.raises(MappingError, match="'greet' was masked"):
        _mapping().remap_case(case)


def test_remap_trajectory_text_protocol_native_calls_loads_and_messages():
    traj = {
        "tool_calls": [{"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}],
        "skill_loads": [{"skill": "item_qa", "ok": True}],
        "model_calls": [
            {
                "text": 'Let me check. <tool_call>{"name": "get_product_info_by_link_id", '
                '"arguments": {"link_id": 3}}</tool_call>',
                "native_tool_calls": [{"name": "load_skill", "arguments": {"name": "item_qa"}}],
                "messages": [
                    {"role": "system", "content": "call get_product_info_by_link_id"},
                    {"role": "tool", "name": "load_skill", "content": "..."},
                ],
            },
            {"text": "<tool_call>not json</tool_call> Link 3 is 89 yuan."},
        ],
    }
    out = _mapping().remap_trajectory(traj)
    assert out["tool_calls"][0] == {"name": "fetchItem", "arguments": {"slot": 3}}
    assert out["skill_loads"][0]["skill"] == "product_answers"
    first = out["model_calls"][0]
    assert first["text"].startswith("Let me check. <tool_call>")
    assert json.loads(first["text"].split("<tool_call>")[1].split("</tool_call>")[0]) == {
        "name": "fetchItem",
        "arguments": {"slot": 3},
    }
    assert first["native_tool_calls"][0] == {
        "name": "open_playbook",
        "arguments": {"name": "product_answers"},
    }
    assert first["messages"][0]["content"] == "call get_product_info_by_link_id"  # re-rendered
    assert first["messages"][1]["name"] == "open_playbook"
    assert out["model_calls"][1]["text"] == "<tool_call>not json</tool_call> Link 3 is 89 yuan."


def test_composed_variants_remap_to_names_in_the_final_bundle(demo_bundle, gold_cases):
    first = transform_tools(bundle=demo_bundle, seed=1)
    second = transform_skill_identifiers(bundle=first.bundle, seed=2)
    both = first.then(second)
    assert both.bundle is second.bundle and both.parent is demo_bundle
    for case in gold_cases:
        try:
            gold = both.mapping.remap_case(case)["gold"]
        except MappingError:
            continue  # this composition did not protect the case's skills
        for skill in gold["reply_skills"] + gold["strategy_skills"]:
            assert skill in both.bundle.skills
        for call in gold["tool_calls"]:
            assert both.bundle.tool_registry.get(call["name"]) is not None
    assert set(both.mapping.tools) == set(first.mapping.tools)
    with pytest.raises(ValueError, match="not made from this variant"):
        second.then(first)


def test_variant_mapping_records_every_family(demo_bundle):
    m = augment_bundle(bundle=demo_bundle, seed=5).mapping
    assert (
        m.tools and m.skills and m.dims == ["skills", "skill-content", "tools", "prompt", "hooks"]
    )
    assert m.constraints or m.block_order
    assert m.retry or m.hook_params or m.hook_messages
    assert m.rewritten_rules or m.masked_rules or m.reordered_rules
    load_tool = m.tool("load_skill")
    assert m.skill_arguments == {load_tool: "name"}
