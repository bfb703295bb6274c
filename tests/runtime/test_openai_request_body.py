"""What OpenAIChatPolicy puts on the wire, seen by a recording HTTP server."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.policies import GenerationSettings
from harness.policies.openai_chat import OpenAIChatPolicy


class _Recorder(BaseHTTPRequestHandler):
    bodies: list[dict] = []
    stream: list[dict] | None = None  # chunks to send instead of the default answer

    def do_POST(self):  # noqa: N802 (http.server naming)
        length = int(self.headers["Content-Length"])
        _Recorder.bodies.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for chunk in _Recorder.stream or (
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
            {"choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": "stop"}]},
            {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2,
                                      "total_tokens": 7}},
        ):
            base = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m"}
            self.wfile.write(f"data: {json.dumps({**base, **chunk})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def recorder():
    _Recorder.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_generation_settings_and_extra_body_reach_the_server(recorder):
    config = json.dumps({"do_sample": True, "temperature": 1.0, "top_p": 0.95})
    policy = OpenAIChatPolicy(base_url=recorder, model="m",
                              settings=GenerationSettings(temperature=1.0, top_p=0.95,
                                                          max_new_tokens=64),
                              extra_body={"generation_config": config})
    out = policy.generate([{"role": "user", "content": "hello"}])
    assert out.text == "Hi there" and out.output_tokens == 2 and out.input_tokens == 5
    body = _Recorder.bodies[-1]
    assert body["stream"] is True and body["max_tokens"] == 64
    assert body["temperature"] == 1.0 and body["top_p"] == 0.95
    assert body["generation_config"] == config


def test_without_extra_body_nothing_engine_specific_is_sent(recorder):
    OpenAIChatPolicy(base_url=recorder, model="m").generate([{"role": "user", "content": "x"}])
    assert "generation_config" not in _Recorder.bodies[-1]


def test_streamed_reasoning_is_kept_as_think_text_and_missing_usage_is_flagged(recorder):
    _Recorder.stream = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "Link 3?"}}]},
        {"choices": [{"index": 0, "delta": {"content": "It is 89 yuan."}, "finish_reason": "stop"}]},
    ]
    try:
        out = OpenAIChatPolicy(base_url=recorder, model="m").generate(
            [{"role": "user", "content": "price?"}])
    finally:
        _Recorder.stream = None
    assert out.text == "<think>Link 3?</think>It is 89 yuan."
    assert out.usage_reported is False and out.output_tokens == 2
    assert out.ttft_s is not None and out.ttft_s <= out.latency_s
