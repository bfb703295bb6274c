"""The local policy: its prefix cache (same greedy text, less prefill) and its stop at the budget."""

from __future__ import annotations

import pytest

from harness.policies import GenerationSettings
from harness.policies.local import MIN_REUSED_PREFIX, TransformersPolicy
from harness.policies.models import tiny_model_dir

SYSTEM = "You are the host of a live stream. " * 40


def _chat(system: str, *turns: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}]
    for i, text in enumerate(turns):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return messages


def _policies() -> tuple[TransformersPolicy, TransformersPolicy]:
    settings = GenerationSettings(temperature=0.0, max_new_tokens=12)
    return (TransformersPolicy(tiny_model_dir(), settings=settings),
            TransformersPolicy(tiny_model_dir(), settings=settings, prefix_cache=False))


def test_shared_system_prompt_is_not_prefilled_again_and_text_is_unchanged():
    cached, plain = _policies()
    prompts = [_chat(SYSTEM, "how much is link 3?"),
               _chat(SYSTEM, "is link 5 in stock?"),  # a new request under the same Harness
               _chat(SYSTEM, "is link 5 in stock?", "Let me check.", "thanks!"),  # its next round
               _chat("A different Harness entirely. " * 30, "hello")]
    reused = []
    for messages in prompts:
        out = cached.generate(messages)
        assert out.text == plain.generate(messages).text
        assert out.input_tokens == plain.generate(messages).input_tokens
        reused.append(cached.last_cached_tokens)
    assert reused[0] == 0
    assert reused[1] > MIN_REUSED_PREFIX and reused[1] < prompts[1][0]["content"].count(" ") * 2
    assert reused[2] > reused[1]  # the whole earlier round is reused
    assert reused[3] == 0  # nothing in common: a fresh cache


def test_the_same_prompt_twice_still_prefills_its_last_token():
    cached, plain = _policies()
    messages = _chat(SYSTEM, "how much is link 3?")
    first = cached.generate(messages)
    second = cached.generate(messages)
    assert second.text == first.text == plain.generate(messages).text
    assert cached.last_cached_tokens == second.input_tokens - 1


def test_generation_stops_at_the_time_left_in_the_budget():
    policy = TransformersPolicy(tiny_model_dir(), settings=GenerationSettings(temperature=0.0, max_new_tokens=400),
                                prefix_cache=False)
    full = policy.generate(_chat(SYSTEM, "how much is link 3?"))
    assert full.output_tokens == 400 and full.finish_reason == "length"  # the random tiny model never stops
    cut = policy.generate(_chat(SYSTEM, "how much is link 3?"), timeout_s=full.latency_s / 4)
    assert cut.finish_reason == "timeout" and 0 < cut.output_tokens < 400
    assert cut.latency_s < full.latency_s / 2


def test_a_failed_call_leaves_no_stale_cache(monkeypatch):
    cached, plain = _policies()
    cached.generate(_chat(SYSTEM, "how much is link 3?"))
    from harness.policies.local import load_model

    model, _ = load_model(tiny_model_dir())

    def fail(*args, **kwargs):
        raise RuntimeError("out of memory")

    with monkeypatch.context() as patch:
        patch.setattr(model, "generate", fail)
        with pytest.raises(RuntimeError, match="out of memory"):
            cached.generate(_chat(SYSTEM, "is link 5 in stock?"))
    messages = _chat(SYSTEM, "is link 5 in stock?", "Let me check.", "thanks!")
    assert cached.generate(messages).text == plain.generate(messages).text
    assert cached.last_cached_tokens == 0  # started afresh
