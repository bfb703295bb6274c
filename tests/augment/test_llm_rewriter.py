"""The optional LLM rewriter against a local OpenAI-compatible stub server."""

from __future__ import annotations

import random

import pytest

from harness.augment import augment_bundle, checked_rewrite
from harness.augment.llm import LLMRewriter, clean_answer
from harness.policies.roles import ROLES


@pytest.fixture
def stub(fake_openai):
    """(URL, the server): it answers each request with the next of ``answers``, else with the rule
    it was asked to rewrite prefixed "Please note: "; ``seen`` holds the request bodies."""

    def echo(body):
        return "Please note: " + body["messages"][-1]["content"].split("\n\n(Keep these names")[0]

    fake_openai.answer = echo
    return fake_openai.url, fake_openai


def test_good_llm_rewrite_is_used_and_names_are_requested(stub):
    url, state = stub
    state.answers = ['"Rewritten: Before replying, call search_faq; never guess, keep 48 hours."']
    rule = "Call search_faq before replying; never guess and keep 48 hours."
    result = checked_rewrite(
        rule, rng=random.Random(0), names=["search_faq"], rewriter=LLMRewriter.from_spec(f"{url}:m")
    )
    assert result.text == "Before replying, call search_faq; never guess, keep 48 hours."
    assert result.source == "llm:m"
    assert "Keep these names exactly: search_faq" in state.bodies[0]["messages"][-1]["content"]


def test_llm_rewrite_that_breaks_a_constraint_is_refused_and_asked_again(stub):
    url, state = stub
    state.answers = [
        "Call the FAQ tool before replying.",  # lost the name and the number
        "You may guess; call search_faq within 48 hours.",  # lost the negation
        "Before replying, call search_faq; do not guess; 48 hours.",
    ]
    rule = "Call search_faq before replying; never guess and keep 48 hours."
    result = checked_rewrite(
        rule, rng=random.Random(0), names=["search_faq"], rewriter=LLMRewriter.from_spec(f"{url}:m")
    )
    assert result.text == "Before replying, call search_faq; do not guess; 48 hours."
    assert len(result.rejected) == 2
    assert "referenced names changed" in result.rejected[0]
    assert "negations changed" in result.rejected[1]


def test_unreachable_endpoint_falls_back_to_the_offline_engine():
    rewriter = LLMRewriter.from_spec("http://127.0.0.1:9/v1:m")
    rule = "Call search_faq before replying; never guess."
    result = checked_rewrite(rule, rng=random.Random(1), names=["search_faq"], rewriter=rewriter)
    assert result.changed and result.source == "offline"
    assert "endpoint error" in result.rejected[0]


def test_augment_with_the_llm_rewriter(stub, demo_bundle):
    url, state = stub
    variant = augment_bundle(
        bundle=demo_bundle,
        seed=2,
        dims=["skill-content"],
        rewriter=LLMRewriter.from_spec(f"{url}:m"),
    )
    rewritten = [
        r.text
        for s in variant.bundle.skills.values()
        for r in s.rules
        if r.text.startswith("Please note: ")
    ]
    assert rewritten and len(state.bodies) >= len(rewritten)


def test_spec_parsing_and_answer_cleaning():
    r = LLMRewriter.from_spec("http://localhost:8000/v1:qwen2.5")
    assert r.name == "llm:qwen2.5" and r.model.policy.model == "qwen2.5"
    client = r.model.policy.client
    assert (client.timeout, client.max_retries) == (
        ROLES["paraphraser"].timeout_s,
        ROLES["paraphraser"].retries,
    )
    with pytest.raises(ValueError, match="BASE_URL:MODEL"):
        LLMRewriter.from_spec("qwen")
    assert clean_answer("<think>hmm</think>\n```\nDo it.\n```") == "Do it."
