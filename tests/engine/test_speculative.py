"""Speculative decoding in the local engine: exact for greedy, the policy's distribution for
sampling.

Greedy: with a real (untrained) draft head and with a scripted head that drafts
the right continuation except at chosen positions, the engine's output equals
plain greedy decoding token for token, over many prompts that share a Harness
prefix (so the head's cache is also taken from the prefix store). Sampling: on a
toy five-token vocabulary, the next two tokens after a cycle are distributed as
the policy's own (chi-square against the exact probabilities), with a draft whose
distribution is far from the policy's.
"""

from __future__ import annotations

import math
import random

import pytest
import torch

from harness.model_cache import tiny_model_dir
from serving.engine import Engine, EngineModel, SamplingParams, Speculator
from serving.engine.draft_head import DraftHead, load_head
from serving.engine.policy import load_model
from tests.engine.test_engine import _prompts


@pytest.fixture(scope="module")
def tiny():
    return load_model(tiny_model_dir())


def _reference(model, prompts, n):
    engine = Engine(EngineModel(model), prefix_cache=False)
    try:
        return [engine.generate(p, SamplingParams(max_new_tokens=n)).ids for p in prompts]
    finally:
        engine.close()


@pytest.mark.parametrize("hot", [False, True], ids=["whole-vocabulary", "hot-vocabulary"])
def test_speculative_greedy_equals_plain_greedy_with_a_real_head(tiny, tmp_path, hot):
    model, tokenizer = tiny
    prompts = _prompts(tokenizer, 12, seed=3)
    expected = _reference(model, prompts, 24)
    torch.manual_seed(0)
    head = DraftHead.for_policy(model)
    if hot:  # a draft vocabulary holding the reference outputs' tokens and some others
        ids = sorted({t for out in expected for t in out} | set(range(100)))
        head.set_hot_tokens(torch.tensor(ids))
    head.save(tmp_path / "head", policy_config=model.config)
    engine = Engine(
        EngineModel(model), draft=Speculator(load_head(tmp_path / "head", model), steps=3)
    )
    try:
        for prompt, want in zip(prompts, expected, strict=True):
            done = engine.generate(prompt, SamplingParams(max_new_tokens=24))
            assert done.ids == want
            assert done.spec is not None and done.spec.cycles >= 1
            assert done.spec.drafted == 3 * done.spec.cycles
        assert (
            engine.prefix.hits > 0
        )  # later prompts took the shared prefix, the head's slots with it
    finally:
        engine.close()


class _ScriptedHead:
    """Drafts the reference continuation, wrong wherever ``wrong(slot)`` says (same interface as
    DraftHead).

    The block's output at slot s guesses the token at position s + 2; the head reads s off
    ``project``'s positions, so it needs no weights."""

    def __init__(self, model, reference: list[int], wrong) -> None:
        self.model = model
        self.reference = reference
        self.wrong = wrong
        self.config = type("C", (), {"steps": 3})()
        self.scale = 1.0
        self._slots: list[int] = []

    def eval(self):
        return self

    def fuse(self, hidden, tokens):
        return torch.zeros(hidden.shape[0], 4)

    def project(self, x, positions):
        self._slots = positions.tolist()
        n, kv, d = x.shape[0], self.model.config.num_key_value_heads, self.model.config.head_dim
        zeros = torch.zeros(n, kv, d)
        return torch.zeros(n, self.model.config.num_attention_heads, d), zeros, zeros

    def finish(self, x, attn):
        return torch.tensor(self._slots, dtype=torch.float32)[:, None]

    def logits(self, out):
        rows = []
        for slot in out[:, 0].tolist():
            at = int(slot) + 2
            token = self.reference[at] if at < len(self.reference) else 0
            if self.wrong(int(slot)):
                token = (token + 1) % self.model.config.vocab_size
            row = torch.full((self.model.config.vocab_size,), -1e9)
            row[token] = 0.0
            rows.append(row)
        return torch.stack(rows)

    def draft_logits(self, out):
        return self.logits(out), None


@pytest.mark.parametrize("pattern", ["all-right", "every-third-wrong", "random"])
def test_speculative_greedy_is_exact_whatever_the_draft_gets_right(tiny, pattern):
    model, tokenizer = tiny
    prompts = _prompts(tokenizer, 6, seed=11)
    expected = _reference(model, prompts, 20)
    rng = random.Random(pattern)
    wrong = {
        "all-right": lambda s: False,
        "every-third-wrong": lambda s: s % 3 == 0,
        "random": lambda s: rng.random() < 0.4,
    }[pattern]
    accepted = 0
    for prompt, want in zip(prompts, expected, strict=True):
        head = _ScriptedHead(model, list(prompt) + want, wrong)
        engine = Engine(EngineModel(model), draft=Speculator(head, steps=3), prefix_cache=False)
        try:
            done = engine.generate(prompt, SamplingParams(max_new_tokens=20))
        finally:
            engine.close()
        assert done.ids == want
        accepted += done.spec.accepted
        if pattern == "all-right":
            # every cycle keeps its three drafts and adds the policy's token
            assert done.spec.acceptance_length == pytest.approx(4.0, abs=1.0)
    assert accepted > 0


def _toy_policy(vocab: int = 5):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(7)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        architectures=["LlamaForCausalLM"],
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        model.model.embed_tokens.weight.mul_(2.0)  # toy distributions neither uniform nor one-hot
    return model


@pytest.mark.parametrize(
    "hot", [None, [0, 1, 3]], ids=["whole-vocabulary", "draft-vocabulary-of-3"]
)
def test_speculative_sampling_keeps_the_policy_distribution(hot):
    vocab, trials = 5, 4000
    model = _toy_policy(vocab)
    engine_model = EngineModel(model)
    torch.manual_seed(1)
    head = DraftHead.for_policy(model)
    with torch.no_grad():
        for p in head.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    head.set_hot_tokens(torch.tensor(hot) if hot else None)
    spec = Speculator(head, steps=3)
    params = SamplingParams(temperature=1.0, max_new_tokens=8)
    prompt = torch.tensor([1, 2, 3, 4, 0, 2])
    x_p = 3  # the next token (sampled before the cycle)
    with torch.inference_mode():
        base = spec.new_sequence(engine_model, 32)
        _, hidden = engine_model.prefill(base, prompt, states=True)
        pending0 = spec.absorb(base, None, hidden, prompt)
        tokens = torch.cat([prompt, torch.tensor([x_p])])
        # the policy's exact distribution of the two tokens after x_P
        probs = torch.zeros(vocab, vocab)
        with torch.no_grad():
            p1 = torch.softmax(model(tokens[None]).logits[0, -1].float(), -1)
            for a in range(vocab):
                p2 = torch.softmax(
                    model(torch.cat([tokens, torch.tensor([a])])[None]).logits[0, -1].float(), -1
                )
                probs[a] = p1[a] * p2
            q1 = torch.softmax(
                head.restrict(
                    head.logits(spec.extend(_copy(base), pending0, tokens[-1:], base.draft_length))
                )[0],
                -1,
            )
        assert 0.5 * float((q1 - p1).abs().sum()) > 0.1, (
            "the draft must differ from the policy for the test to bite"
        )
        counts = torch.zeros(vocab, vocab)
        generator = torch.Generator().manual_seed(2)
        for _ in range(trials):
            seq = _copy(base)
            new, _, pending, _ = spec.cycle(engine_model, seq, pending0, tokens, params, generator)
            if len(new) < 2:  # the first draft was rejected: one more cycle gives the second token
                more, _, _, _ = spec.cycle(
                    engine_model,
                    seq,
                    pending,
                    torch.cat([tokens, torch.tensor(new)]),
                    params,
                    generator,
                )
                new = new + more
            counts[new[0], new[1]] += 1
    expected = probs * trials
    keep = expected >= 5
    chi2 = float((((counts - expected) ** 2) / expected)[keep].sum())
    dof = int(keep.sum()) - 1
    # Wilson-Hilferty: the chi-square quantile at p = 0.999 for dof degrees of freedom
    z = 3.09
    limit = dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3
    assert chi2 < limit, (chi2, limit, counts, expected)


def _copy(seq):
    clone = type(seq).__new__(type(seq))
    clone.k, clone.v = seq.k.clone(), seq.v.clone()
    clone.length, clone.draft_length = seq.length, seq.draft_length
    return clone
