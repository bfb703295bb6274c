"""The local engine against transformers' own generate, on the tiny random model.

Greedy outputs must be token for token those of ``model.generate`` (fp32), one
request at a time and in a batch; the Harness prefix is shared across threads;
the deadline, cancellation and a failing request behave as the policy expects.
"""

from __future__ import annotations

import random
import threading

import pytest
import torch

from harness.model_cache import tiny_model_dir
from serving.engine import Engine, EngineError, EngineModel, SamplingParams, UnsupportedModel
from serving.engine.policy import load_model

SYSTEM = "You are the host of a live stream. Answer with the catalogue's facts. " * 25


@pytest.fixture(scope="module")
def tiny():
    return load_model(tiny_model_dir())


@pytest.fixture
def engine(tiny):
    model, _tokenizer = tiny
    return Engine(EngineModel(model))


def _prompt(tokenizer, system: str, user: str) -> list[int]:
    chat = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return list(
        tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_dict=True)[
            "input_ids"
        ]
    )


def _generate_plain(model, prompt: list[int], n: int) -> list[int]:
    inputs = torch.tensor([prompt])
    with torch.inference_mode():
        out = model.generate(
            inputs,
            attention_mask=torch.ones_like(inputs),
            max_new_tokens=n,
            do_sample=False,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=2,
        )
    return out[0, len(prompt) :].tolist()


def _prompts(tokenizer, count: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    words = [
        "price",
        "stock",
        "link",
        "colour",
        "size",
        "shipping",
        "refund",
        "coupon",
        "bundle",
        "gift",
        "card",
        "live",
        "now",
    ]
    prompts = []
    for i in range(count):
        system = SYSTEM if i % 3 else f"Harness variant {i}. " * rng.randint(5, 60)
        user = " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))
        prompts.append(_prompt(tokenizer, system, user))
    return prompts


def test_greedy_output_equals_generate_token_for_token(tiny, engine):
    model, tokenizer = tiny
    for prompt in _prompts(tokenizer, 16):
        want = _generate_plain(model, prompt, 24)
        got = engine.generate(prompt, SamplingParams(max_new_tokens=24)).ids
        assert got == want


def test_a_batch_decodes_the_same_tokens_as_one_at_a_time(tiny, engine):
    _model, tokenizer = tiny
    prompts = _prompts(tokenizer, 8, seed=1)
    alone = [engine.generate(p, SamplingParams(max_new_tokens=20)).ids for p in prompts]
    fresh = Engine(EngineModel(tiny[0]), prefix_cache=False)
    requests = [fresh.submit(p, SamplingParams(max_new_tokens=20)) for p in prompts]
    together = [r.result(timeout=60).ids for r in requests]
    assert together == alone
    assert fresh.stats.max_batch_seen > 1  # they really were decoded together


def test_the_harness_prefix_is_computed_once_and_shared_across_threads(tiny, engine):
    model, tokenizer = tiny
    first = _prompt(tokenizer, SYSTEM, "how much is link 3?")
    shared = len(_prompt(tokenizer, SYSTEM, ""))  # roughly the system prompt's tokens
    engine.generate(first, SamplingParams(max_new_tokens=8))
    results = {}

    def ask(name: str, user: str) -> None:
        prompt = _prompt(tokenizer, SYSTEM, user)
        results[name] = (prompt, engine.generate(prompt, SamplingParams(max_new_tokens=8)))

    threads = [
        threading.Thread(target=ask, args=(f"t{i}", f"is link {i} in stock?")) for i in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for prompt, done in results.values():
        assert done.cached_tokens >= shared - 8  # only the user's turn was prefilled
        assert done.ids == _generate_plain(model, prompt, 8)
    assert engine.stats.prefill_tokens < len(first) + 4 * 40


def test_the_next_round_of_a_request_reuses_the_whole_first_round(tiny, engine):
    _model, tokenizer = tiny
    prompt = _prompt(tokenizer, SYSTEM, "how much is link 3?")
    done = engine.generate(prompt, SamplingParams(max_new_tokens=10))
    again = engine.generate(prompt + done.ids + [1, 2, 3], SamplingParams(max_new_tokens=4))
    assert again.cached_tokens >= len(prompt) + len(done.ids) - 1


def test_the_deadline_stops_decoding(tiny, engine):
    import time

    _model, tokenizer = tiny
    prompt = _prompt(tokenizer, SYSTEM, "how much is link 3?")
    full = engine.generate(prompt, SamplingParams(max_new_tokens=300))
    assert full.finish_reason == "length" and len(full.ids) == 300  # the random model never stops
    cut = engine.generate(
        prompt,
        SamplingParams(max_new_tokens=300, deadline=time.perf_counter() + full.latency_s / 4),
    )
    assert cut.finish_reason == "timeout" and len(cut.ids) < 300
    assert cut.ids == full.ids[: len(cut.ids)]


def test_a_cancelled_request_ends_and_others_go_on(tiny, engine):
    _model, tokenizer = tiny
    prompts = _prompts(tokenizer, 2, seed=2)
    slow = engine.submit(prompts[0], SamplingParams(max_new_tokens=5000))
    other = engine.submit(prompts[1], SamplingParams(max_new_tokens=10))
    next(iter(slow.tokens()))
    slow.cancel()
    assert slow.result(timeout=30).finish_reason == "cancelled"
    assert len(other.result(timeout=30).ids) == 10


def test_a_failing_request_raises_and_the_engine_keeps_serving(tiny, engine, monkeypatch):
    model, tokenizer = tiny
    prompt = _prompts(tokenizer, 1, seed=3)[0]

    def fail(*args, **kwargs):
        raise RuntimeError("out of memory")

    with monkeypatch.context() as patch:
        patch.setattr(engine.model, "decode", fail)
        with pytest.raises(EngineError, match="out of memory"):
            engine.generate(prompt, SamplingParams(max_new_tokens=5))
    assert engine.generate(prompt, SamplingParams(max_new_tokens=6)).ids == _generate_plain(
        model, prompt, 6
    )


def test_seeded_sampling_is_reproducible_whatever_else_runs(tiny, engine):
    _model, tokenizer = tiny
    prompts = _prompts(tokenizer, 4, seed=4)
    params = SamplingParams(max_new_tokens=16, temperature=1.0, top_p=0.9, seed=7, logprobs=True)
    alone = engine.generate(prompts[0], params)
    crowd = [
        engine.submit(p, SamplingParams(max_new_tokens=16, temperature=1.0)) for p in prompts[1:]
    ]
    again = engine.generate(prompts[0], params)
    for request in crowd:
        request.result(timeout=30)
    assert again.ids == alone.ids
    assert len(alone.logprobs) == 16 and all(lp <= 0 for lp in alone.logprobs)


def test_a_model_the_engine_does_not_implement_is_refused_with_its_reason(tiny):
    model, _tokenizer = tiny
    model.config.architectures = ["GPT2LMHeadModel"]
    try:
        with pytest.raises(UnsupportedModel, match="GPT2LMHeadModel"):
            EngineModel(model)
    finally:
        model.config.architectures = ["LlamaForCausalLM"]


def test_int8_weights_are_a_quarter_of_the_fp32_bytes(tiny):
    model, _tokenizer = tiny
    fp32, int8 = EngineModel(model), EngineModel(model, quantization="int8")
    assert int8.weight_bytes * 4 == fp32.weight_bytes
    with pytest.raises(ValueError, match="quantization: 'int4' is not one of none, int8"):
        EngineModel(model, quantization="int4")


def test_the_int8_kernel_is_the_dequantized_matmul_for_any_batch_and_width():
    from serving.engine.kernels import int8_linear, kernel_problem, quantize_per_channel

    assert kernel_problem() is None  # scripts/bootstrap.sh installs g++ and ninja
    torch.manual_seed(0)
    for n, k in ((96, 64), (130, 100), (576, 1536)):  # 100: a width that is not a multiple of 32
        weight = torch.randn(n, k)
        q, scale = quantize_per_channel(weight)
        assert (
            q.dtype == torch.int8
            and (q.float() * scale[:, None] - weight).abs().max() <= scale.max() / 2 + 1e-6
        )
        for m in (1, 3, 8, 11):
            x = torch.randn(m, k)
            want = torch.nn.functional.linear(x, q.float() * scale[:, None])
            assert torch.allclose(int8_linear(x, q, scale), want, atol=1e-4, rtol=1e-4)


def test_int8_greedy_decoding_does_not_depend_on_the_batch(tiny):
    model, tokenizer = tiny
    engine = Engine(EngineModel(model, quantization="int8"), prefix_cache=False)
    prompts = _prompts(tokenizer, 6, seed=5)
    alone = [engine.generate(p, SamplingParams(max_new_tokens=16)).ids for p in prompts]
    together = [
        r.result(timeout=60).ids
        for r in [engine.submit(p, SamplingParams(max_new_tokens=16)) for p in prompts]
    ]
    assert together == alone and engine.stats.max_batch_seen > 1
    engine.close()


def test_keep_states_returns_the_hidden_state_of_every_position_run(tiny):
    """What the MTP adaptation trains on: the final-normalised hidden states, equal to
    transformers'."""
    model, tokenizer = tiny
    engine = Engine(EngineModel(model))
    try:
        first, second = _prompts(tokenizer, 2)[1], None
        done = engine.generate(first, SamplingParams(max_new_tokens=6, keep_states=True))
        sequence = first + done.ids
        assert done.states.shape == (
            len(sequence) - 1 - done.cached_tokens,
            model.config.hidden_size,
        )
        with torch.inference_mode():
            want = model(torch.tensor([sequence[:-1]]), output_hidden_states=True).hidden_states[
                -1
            ][0]
        torch.testing.assert_close(done.states, want[done.cached_tokens :], atol=2e-4, rtol=1e-4)
        # a second request on the same prefix: the cached part has no states, the rest does
        second = sequence + tokenizer("more?", add_special_tokens=False)["input_ids"]
        again = engine.generate(second, SamplingParams(max_new_tokens=3, keep_states=True))
        assert again.cached_tokens > 0
        assert again.states.shape[0] == len(second) + len(again.ids) - 1 - again.cached_tokens
    finally:
        engine.close()
