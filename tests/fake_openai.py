"""One fake OpenAI-compatible server for the tests: a real HTTP server on a free loopback port.

``GET /v1/models`` lists ``models`` (401 when ``api_key`` is set and the request's bearer key is
another); ``POST /v1/chat/completions`` answers with the next of ``answers`` (or ``answer(body)``,
or "Hi there"), as one JSON completion or, when the request asks to stream, as chunks (``chunks``
replaces the default ones, which end with a usage chunk of 5 prompt and 2 completion tokens). Every
request is recorded in ``requests`` (method, path, headers, parsed body).

    with FakeOpenAI() as server:            # or the ``fake_openai`` fixture (tests/conftest.py)
        server.answers.append("Link 3 is 89 yuan.")
        OpenAIChatPolicy(base_url=server.url, model="demo-model", ...)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_CHUNKS = (
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
    {"choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": "stop"}]},
    {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}},
)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


@dataclass
class FakeOpenAI:
    models: list[str] = field(default_factory=lambda: ["demo-model"])
    api_key: str | None = None
    answers: list[str] = field(default_factory=list)
    answer: Callable[[dict], str] | None = None
    chunks: list[dict] | None = None
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None

    # --- lifecycle -------------------------------------------------------------
    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                fake._handle(self, None)

            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                fake._handle(self, json.loads(self.rfile.read(length) or b"null"))

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The base URL a client is given (``http://127.0.0.1:PORT/v1``)."""
        assert self._server is not None, "start() the fake server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    # --- what a client sees ----------------------------------------------------
    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies of the chat requests, in order."""
        return [r.body for r in self.requests if r.method == "POST"]

    @property
    def authorizations(self) -> list[str]:
        """The Authorization header of every request ('' when none was sent). Header names are read
        without regard to case: the OpenAI client sends ``authorization``, and a case-sensitive
        lookup read its key as none sent."""
        return [
            next(
                (value for name, value in r.headers.items() if name.lower() == "authorization"), ""
            )
            for r in self.requests
        ]

    def _handle(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        self.requests.append(Recorded(handler.command, handler.path, dict(handler.headers), body))
        if (
            self.api_key is not None
            and handler.headers.get("Authorization") != f"Bearer {self.api_key}"
        ):
            return self._send(handler, 401, {"error": {"message": "invalid API key"}})
        if handler.command == "GET" and handler.path == "/v1/models":
            return self._send(
                handler, 200, {"object": "list", "data": [{"id": m} for m in self.models]}
            )
        if handler.command == "POST" and handler.path == "/v1/chat/completions":
            if isinstance(body, dict) and body.get("stream"):
                return self._stream(handler, body)
            text = self._next_answer(body)
            return self._send(
                handler,
                200,
                {
                    "id": "c1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", ""),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text},
                        }
                    ],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
                },
            )
        return self._send(
            handler, 404, {"error": {"message": f"no {handler.command} {handler.path} here"}}
        )

    def _next_answer(self, body: Any) -> str:
        if self.answers:
            return self.answers.pop(0)
        return self.answer(body) if self.answer is not None else "Hi there"

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        if self.chunks is not None:
            chunks = self.chunks
        elif self.answers or self.answer is not None:
            text = self._next_answer(body)
            chunks = [
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ]
                },
                DEFAULT_CHUNKS[2],
            ]
        else:
            chunks = list(DEFAULT_CHUNKS)
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.end_headers()
        for chunk in chunks:
            base = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body.get("model", ""),
            }
            handler.wfile.write(f"data: {json.dumps({**base, **chunk})}\n\n".encode())
        handler.wfile.write(b"data: [DONE]\n\n")

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
