"""Policies: the text protocol, reasoning stripping, scripted replay, local models."""

from __future__ import annotations

import json

import pytest

from harness.livestream import demo_catalogue
from harness.model_cache import tiny_model_dir
from harness.policies import (
    GenerationSettings,
    PolicyError,
    ScriptedPolicy,
    make_policy,
    parse_reply,
)
from harness.runtime import Agent
from harness.runtime.trajectory_replay import replay_trajectory, same_behaviour

from .helpers import call, price_request

GOOD = [
    call("get_product_info_by_link_id", link_id=3),
    call("load_skill", name="item_qa"),
    "Link 3 is the Sunscreen SPF50 at 89 yuan.",
]


def test_parse_reply_splits_calls_reasoning_and_errors():
    parsed = parse_reply(
        "<think>user wants the price</think>Checking! "
        '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call>'
        '<tool_call>{"name": "b", "arguments": "{\\"y\\": 2}"}</tool_call>'
        '<tool_call>[{"name": "c", "arguments": {}}]</tool_call>'
        '<tool_call>{"arguments": {}}</tool_call>'
    )
    assert [(c.name, c.arguments) for c in parsed.tool_calls] == [
        ("a", {"x": 1}),
        ("b", {"y": 2}),
        ("c", {}),
    ]
    assert parsed.text == "Checking!"
    assert parsed.reasoning == "user wants the price"
    assert parsed.errors == ["tool call has no 'name' (a string): {\"arguments\": {}}"]


def test_unclosed_think_and_unclosed_tool_call():
    assert parse_reply("Sure.<think>half a thought").text == "Sure."
    assert parse_reply("thinking...</think>Link 3 is 89 yuan.").text == "Link 3 is 89 yuan."
    cut = parse_reply('<tool_call>{"name": "a", "arguments": {"x": 1}}')
    assert [c.name for c in cut.tool_calls] == ["a"]
    broken = parse_reply('<tool_call>{"name": "a", "argu')
    assert broken.tool_calls == [] and "unclosed <tool_call>" in broken.errors[0]


def test_scripted_policy_runs_out_with_a_clear_error():
    policy = ScriptedPolicy(["one"])
    policy.generate([{"role": "user", "content": "x"}])
    with pytest.raises(PolicyError, match="ran out of outputs after 1"):
        policy.generate([{"role": "user", "content": "x"}])


def test_scripted_policy_by_request_id(tmp_path):
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"a": ["A1"], "b": ["B1"]}))
    policy = make_policy(f"scripted:{path}")
    policy.begin_request("b")
    assert policy.generate([]).text == "B1"
    with pytest.raises(PolicyError, match="no outputs for request 'c'"):
        policy.begin_request("c")


def test_native_tool_calls_use_tool_messages(demo_bundle):
    policy = ScriptedPolicy(
        [
            {
                "text": "",
                "tool_calls": [
                    {"id": "c1", "name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}
                ],
            },
            {"text": "", "tool_calls": [{"name": "load_skill", "arguments": {"name": "item_qa"}}]},
            "Link 3 is 89 yuan.",
        ]
    )
    with Agent(
        bundle=demo_bundle, policy=policy, catalogue=demo_catalogue(), connect_mcp=False
    ) as agent:
        traj = agent.run(price_request())
    second = policy.calls[1]
    assert second[-2]["tool_calls"][0]["id"] == "c1"
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "c1"
    assert '"price":89.0' in second[-1]["content"]
    assert traj.outcome == "replied"


def test_gold_trajectory_replays_to_the_same_behaviour(demo_bundle):
    with Agent(
        bundle=demo_bundle,
        policy=ScriptedPolicy(GOOD),
        catalogue=demo_catalogue(),
        connect_mcp=False,
    ) as agent:
        gold = agent.run(price_request()).to_dict()
    again = replay_trajectory(bundle=demo_bundle, trajectory=gold, connect_mcp=False)
    assert same_behaviour(gold, again.to_dict()) == []
    # under a Harness whose reply-length limit is tighter, the same outputs now fail the gate
    tight = demo_bundle.with_files(
        {
            "prompt.yaml": demo_bundle.files["prompt.yaml"].replace(
                "max_reply_chars: 220", "max_reply_chars: 20"
            )
        }
    )
    changed = replay_trajectory(bundle=tight, trajectory=gold, connect_mcp=False)
    assert any("reply-length" in d for d in same_behaviour(gold, changed.to_dict()))


def test_tiny_model_is_deterministic_and_small():
    path = tiny_model_dir()
    config = json.loads((path / "config.json").read_text())
    assert config["num_hidden_layers"] == 2 and config["hidden_size"] == 64
    policy = make_policy("tiny", settings=GenerationSettings(max_new_tokens=6))
    a = policy.generate([{"role": "user", "content": "hi"}])
    b = policy.generate([{"role": "user", "content": "hi"}])
    assert a.text == b.text and a.output_tokens == 6 and a.finish_reason == "length"
    assert a.ttft_s is not None and a.input_tokens > 0


@pytest.mark.parametrize(
    ("spec", "target"),
    [
        ("openai:http://127.0.0.1:8000/v1:none", ("http://127.0.0.1:8000/v1", "none")),
        ("openai:http://host:8000:model", ("http://host:8000", "model")),
        ("openai:https://api.example.com/v1:gpt-4o", ("https://api.example.com/v1", "gpt-4o")),
        ("openai:http://host:11434/v1:qwen2.5:0.5b", ("http://host:11434/v1", "qwen2.5:0.5b")),
        ("openai:http://[::1]:8000/v1:org/model", ("http://[::1]:8000/v1", "org/model")),
    ],
)
def test_an_openai_spec_names_its_base_url_and_model(spec, target):
    """The model is what follows the base URL, colons included (a served model's name, as a replay's
    endpoint sends it, may have one)."""
    policy = make_policy(spec, api_key="x")
    assert (policy.base_url, policy.model) == target


@pytest.mark.parametrize("spec", ["openai:http://host:8000/v1", "openai:http://host:8000/v1:"])
def test_an_openai_spec_without_a_model_is_refused(spec):
    with pytest.raises(ValueError, match="expected openai:BASE_URL:MODEL"):
        make_policy(spec)
