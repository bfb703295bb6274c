"""The optional LLM rewriter against a local OpenAI-compatible stub server."""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from harness.augment import augment_bundle, checked_rewrite
from harness.augment.llm import LLMRewriter, clean_answer


class _Stub(BaseHTTPRequestHandler):
    answers: list[str] = []
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        user = body["messages"][-1]["content"].split("\n\n(Keep these names")[0]
        answer = type(self).answers.pop(0) if type(self).answers else f"Please note: {user}"
        payload = json.dumps({
            "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": answer}}],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def stub():
    _Stub.answers, _Stub.seen = [], []
    server = HTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1", _Stub
    server.shutdown()


def test_good_llm_rewrite_is_used_and_names_are_requested(stub):
    url, state = stub
    state.answers = ['"Rewritten: Before replying, call search_faq; never guess, keep 48 hours."']
    rule = "Call search_faq before replying; never guess and keep 48 hours."
    result = checked_rewrite(rule, rng=random.Random(0), names=["search_faq"],
                             rewriter=LLMRewriter(base_url=url, model="m"))
    assert result.text == "Before replying, call search_faq; never guess, keep 48 hours."
    assert result.source == "llm:m"
    assert "Keep these names exactly: search_faq" in state.seen[0]["messages"][-1]["content"]


def test_llm_rewrite_that_breaks_a_constraint_is_refused_and_asked_again(stub):
    url, state = stub
    state.answers = ["Call the FAQ tool before replying.",  # lost the name and the number
                     "You may guess; call search_faq within 48 hours.",  # lost the negation
                     "Before replying, call search_faq; do not guess; 48 hours."]
    rule = "Call search_faq before replying; never guess and keep 48 hours."
    result = checked_rewrite(rule, rng=random.Random(0), names=["search_faq"],
                             rewriter=LLMRewriter(base_url=url, model="m"))
    assert result.text == "Before replying, call search_faq; do not guess; 48 hours."
    assert len(result.rejected) == 2
    assert "referenced names changed" in result.rejected[0]
    assert "negations changed" in result.rejected[1]


def test_unreachable_endpoint_falls_back_to_the_offline_engine():
    rewriter = LLMRewriter(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2)
    rule = "Call search_faq before replying; never guess."
    result = checked_rewrite(rule, rng=random.Random(1), names=["search_faq"], rewriter=rewriter)
    assert result.changed and result.source == "offline"
    assert "endpoint error" in result.rejected[0]


def test_augment_with_the_llm_rewriter(stub, demo_bundle):
    url, state = stub
    variant = augment_bundle(bundle=demo_bundle, seed=2, dims=["skill-content"],
                             rewriter=LLMRewriter(base_url=url, model="m"))
    rewritten = [r.text for s in variant.bundle.skills.values() for r in s.rules
                 if r.text.startswith("Please note: ")]
    assert rewritten and len(state.seen) >= len(rewritten)


def test_spec_parsing_and_answer_cleaning():
    r = LLMRewriter.from_spec("http://localhost:8000/v1:qwen2.5")
    assert r.model == "qwen2.5"
    with pytest.raises(ValueError, match="BASE_URL:MODEL"):
        LLMRewriter.from_spec("qwen")
    assert clean_answer("<think>hmm</think>\n```\nDo it.\n```") == "Do it."
