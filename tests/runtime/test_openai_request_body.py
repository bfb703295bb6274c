"""What OpenAIChatPolicy puts on the wire, seen by the recording fake server
(tests/fake_openai.py)."""

from __future__ import annotations

import json

from harness.policies import GenerationSettings
from harness.policies.openai_chat import OpenAIChatPolicy


def test_generation_settings_and_extra_body_reach_the_server(fake_openai):
    config = json.dumps({"do_sample": True, "temperature": 1.0, "top_p": 0.95})
    policy = OpenAIChatPolicy(
        base_url=fake_openai.url,
        model="m",
        settings=GenerationSettings(temperature=1.0, top_p=0.95, max_new_tokens=64),
        extra_body={"generation_config": config},
    )
    out = policy.generate([{"role": "user", "content": "hello"}])
    assert out.text == "Hi there" and out.output_tokens == 2 and out.input_tokens == 5
    body = fake_openai.bodies[-1]
    assert body["stream"] is True and body["max_tokens"] == 64
    assert body["temperature"] == 1.0 and body["top_p"] == 0.95
    assert body["generation_config"] == config


def test_without_extra_body_nothing_engine_specific_is_sent(fake_openai):
    OpenAIChatPolicy(base_url=fake_openai.url, model="m").generate(
        [{"role": "user", "content": "x"}]
    )
    assert "generation_config" not in fake_openai.bodies[-1]


def test_streamed_reasoning_is_kept_as_think_text_and_missing_usage_is_flagged(fake_openai):
    fake_openai.chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Link 3?"}}]},
        {
            "choices": [
                {"index": 0, "delta": {"content": "It is 89 yuan."}, "finish_reason": "stop"}
            ]
        },
    ]
    out = OpenAIChatPolicy(base_url=fake_openai.url, model="m").generate(
        [{"role": "user", "content": "price?"}]
    )
    assert out.text == "<think>Link 3?</think>It is 89 yuan."
    assert out.usage_reported is False and out.output_tokens == 2
    assert out.ttft_s is not None and out.ttft_s <= out.latency_s


def test_each_call_names_its_request_and_a_requests_first_call_names_the_one_it_follows(
    fake_openai,
):
    policy = OpenAIChatPolicy(base_url=fake_openai.url, model="m")
    messages = [{"role": "user", "content": "x"}]
    policy.generate(messages)  # a caller that never begins a request sends neither header
    policy.begin_request("dev-0001")
    policy.generate(messages)
    policy.generate(messages)
    policy.begin_request("dev-0002")
    policy.generate(messages)
    policy.generate(messages)
    lowered = [
        {k.lower(): v for k, v in r.headers.items()}
        for r in fake_openai.requests
        if r.method == "POST"
    ]
    sent = [(h.get("x-harness-request"), h.get("x-harness-request-ended")) for h in lowered]
    assert sent[0] == (None, None)
    first, second = sent[1][0], sent[3][0]
    assert len(first) == 32 and first not in (
        "dev-0001",
        "dev-0002",
    )  # random: nothing of the request
    assert sent[1:] == [(first, None), (first, None), (second, first), (second, None)]
