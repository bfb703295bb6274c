"""The local policy on the engine: the shared prefix (same greedy text, less prefill) and its stop
at the budget."""

from __future__ import annotations

import pytest

from harness.model_cache import tiny_model_dir
from harness.policies import GenerationSettings, PolicyError
from serving.engine import MIN_REUSED_PREFIX, Engine, EngineModel, UnsupportedModel
from serving.engine.policy import TransformersPolicy, load_model

SYSTEM = "You are the host of a live stream. " * 40


def _chat(system: str, *turns: str) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": system}]
    for i, text in enumerate(turns):
        messages.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return messages


def _policies() -> tuple[TransformersPolicy, TransformersPolicy]:
    """One policy on a fresh engine (empty prefix store), one on transformers' plain generate."""
    settings = GenerationSettings(temperature=0.0, max_new_tokens=12)
    engine = Engine(EngineModel(load_model(tiny_model_dir())[0]))
    return (
        TransformersPolicy(tiny_model_dir(), settings=settings, engine=engine),
        TransformersPolicy(tiny_model_dir(), settings=settings, engine="transformers"),
    )


def test_shared_system_prompt_is_not_prefilled_again_and_text_is_unchanged():
    cached, plain = _policies()
    prompts = [
        _chat(SYSTEM, "how much is link 3?"),
        _chat(SYSTEM, "is link 5 in stock?"),  # a new request under the same Harness
        _chat(SYSTEM, "is link 5 in stock?", "Let me check.", "thanks!"),  # its next round
        _chat("A different Harness entirely. " * 30, "hello"),
    ]
    reused = []
    for messages in prompts:
        out = cached.generate(messages)
        assert out.text == plain.generate(messages).text
        assert out.input_tokens == plain.generate(messages).input_tokens
        reused.append(cached.last_cached_tokens)
    assert reused[0] == 0
    assert reused[1] > MIN_REUSED_PREFIX and reused[1] < prompts[1][0]["content"].count(" ") * 2
    assert reused[2] > reused[1]  # the whole earlier round is reused
    assert reused[3] == 0  # nothing in common: prefilled in full


def test_the_same_prompt_twice_still_prefills_its_last_token():
    cached, plain = _policies()
    messages = _chat(SYSTEM, "how much is link 3?")
    first = cached.generate(messages)
    second = cached.generate(messages)
    assert second.text == first.text == plain.generate(messages).text
    assert cached.last_cached_tokens == second.input_tokens - 1


@pytest.mark.parametrize("engine", ["engine", "transformers"])
def test_generation_stops_at_the_time_left_in_the_budget(engine):
    policy = TransformersPolicy(
        tiny_model_dir(),
        settings=GenerationSettings(temperature=0.0, max_new_tokens=400),
        engine=engine,
    )
    full = policy.generate(_chat(SYSTEM, "how much is link 3?"))
    assert (
        full.output_tokens == 400 and full.finish_reason == "length"
    )  # the random tiny model never stops
    cut = policy.generate(_chat(SYSTEM, "how much is link 3?"), timeout_s=full.latency_s / 4)
    assert cut.finish_reason == "timeout" and 0 < cut.output_tokens < 400
    assert cut.latency_s < full.latency_s / 2


def test_a_failed_call_raises_a_policy_error_and_the_next_call_is_unchanged(monkeypatch):
    cached, plain = _policies()
    cached.generate(_chat(SYSTEM, "how much is link 3?"))
    engine = cached.engine()

    def fail(*args, **kwargs):
        raise RuntimeError("out of memory")

    with monkeypatch.context() as patch:
        patch.setattr(engine.model, "decode", fail)
        with pytest.raises(PolicyError, match="local engine: RuntimeError: out of memory"):
            cached.generate(_chat(SYSTEM, "is link 5 in stock?"))
    messages = _chat(SYSTEM, "is link 5 in stock?", "Let me check.", "thanks!")
    assert cached.generate(messages).text == plain.generate(messages).text
    assert cached.last_cached_tokens > MIN_REUSED_PREFIX  # the first call's prefix is still good


def test_a_checkpoint_the_engine_does_not_implement_falls_back_to_generate(tmp_path, monkeypatch):
    import shutil

    checkpoint = tmp_path / "other-architecture"  # its own path: no engine of this process holds it
    shutil.copytree(tiny_model_dir(), checkpoint)
    model, _tokenizer = load_model(checkpoint)
    monkeypatch.setattr(model.config, "architectures", ["GPT2LMHeadModel"])
    settings = GenerationSettings(temperature=0.0, max_new_tokens=8)
    policy = TransformersPolicy(checkpoint, settings=settings)
    out = policy.generate(_chat(SYSTEM, "hello"))
    assert policy.engine() is None and out.output_tokens == 8
    for explicit in (
        {"engine": "engine"},
        {"quantization": "int8"},
    ):  # asked for: refused with the reason
        with pytest.raises(UnsupportedModel, match="GPT2LMHeadModel"):
            TransformersPolicy(checkpoint, settings=settings, **explicit).engine()


def test_a_bad_quantization_setting_names_the_variable(monkeypatch):
    monkeypatch.setenv("HARNESS_ENGINE_QUANTIZATION", "int4")
    with pytest.raises(
        ValueError, match=r"\$HARNESS_ENGINE_QUANTIZATION: 'int4' is not one of none, int8"
    ):
        TransformersPolicy(tiny_model_dir())
