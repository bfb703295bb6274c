"""The engine server's HTTP app (``build_app``): ``/health``, ``/v1/models``, ``/get_server_info``
and ``/v1/chat/completions`` over one backend. A chat completion is checked against the context
before any prefill, runs on a worker thread (``Completion``) and is answered whole or as a stream
of text deltas (``TextStream``); a client that goes away cancels it.

Starlette is imported where the app is built and answered, not with this module (``python -m
serving`` and the profiles read the quantization names without it)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.policies.openai_chat import ENDED_HEADER, REQUEST_HEADER
from serving.engine_server.backends import Backend, Result, make_backend
from serving.engine_server.parsing import (
    READ_TIMEOUT_S,
    BadRequest,
    parse_body,
    read_body,
    request_id,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import JSONResponse


class TextStream:
    """Token ids in, text deltas out, decoding only a short window of the latest tokens.

    A delta is sent once the window's text grows and does not end inside a UTF-8
    character (byte-level BPE splits characters across tokens), as vLLM's
    incremental detokenizer does.
    """

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix = 0  # start of the window
        self.read = 0  # tokens whose text has been sent

    def push(self, tokens: list[int]) -> str:
        self.ids.extend(tokens)
        decode = self.tokenizer.decode
        before = decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        after = decode(self.ids[self.prefix :], skip_special_tokens=True)
        if len(after) <= len(before) or after.endswith("\ufffd"):
            return ""
        self.prefix, self.read = self.read, len(self.ids)
        return after[len(before) :]


def finish_reason(reason: str) -> str:
    """The engine's finish reason in OpenAI's words (a deadline or cancel reads as ``length``)."""
    return "stop" if reason == "stop" else "length"


def usage(done: Result) -> dict[str, Any]:
    """A finished completion's ``usage`` object."""
    return {
        "prompt_tokens": done.prompt_tokens,
        "completion_tokens": len(done.ids),
        "total_tokens": done.prompt_tokens + len(done.ids),
        "prompt_tokens_details": {"cached_tokens": done.cached_tokens},
    }


def error(status: int, message: str) -> JSONResponse:
    """An OpenAI-shaped error; a 408 or 413 closes the connection (its body may be unread)."""
    from starlette.responses import JSONResponse

    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": status}},
        status_code=status,
        headers={"Connection": "close"} if status in (408, 413) else None,
    )


class Completion:
    """One chat completion on the backend: ``start`` runs it on a worker thread, whose tokens
    arrive on ``queue`` (``None`` once it is over); ``cancel`` stops it at the next prefill batch
    or token."""

    def __init__(
        self, backend: Backend, prompt: Any, body: dict[str, Any], agent_request: str | None
    ) -> None:
        self.backend, self.prompt, self.body, self.agent_request = (
            backend,
            prompt,
            body,
            agent_request,
        )
        self.loop = asyncio.get_running_loop()
        self.cancel = threading.Event()
        self.queue: asyncio.Queue = asyncio.Queue()

    def _on_tokens(self, tokens: list[int]) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, list(tokens))

    def _work(self) -> Result:
        try:
            return self.backend.run(
                self.prompt, self.body, self.cancel, self._on_tokens, request=self.agent_request
            )
        finally:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, None)

    def start(self) -> asyncio.Future:
        return self.loop.run_in_executor(None, self._work)


class EngineApp:
    """The routes of one served checkpoint; ``starlette()`` is the application."""

    def __init__(
        self,
        backend: Backend,
        *,
        checkpoint: Path,
        model_id: str,
        quantization: str,
        max_tokens_cap: int,
        read_timeout_s: float,
    ) -> None:
        self.backend = backend
        self.tokenizer = backend.tokenizer
        self.checkpoint = checkpoint
        self.model_id = model_id
        self.quantization = quantization
        self.max_tokens_cap = max_tokens_cap
        self.read_timeout_s = read_timeout_s
        # a token is at most this many characters, so a longer text is over the context without
        # tokenizing it
        self.longest_token = max(len(t) for t in self.tokenizer.get_vocab()) + 1
        self.created = int(time.time())

    def starlette(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        return Starlette(
            routes=[
                Route("/health", self.health),
                Route("/v1/models", self.models),
                Route("/get_server_info", self.server_info),
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
            ]
        )

    async def health(self, _request: Request) -> JSONResponse:
        from starlette.responses import JSONResponse

        return JSONResponse({"status": "ok"})

    async def models(self, _request: Request) -> JSONResponse:
        from starlette.responses import JSONResponse

        engine = dict(self.backend.info, quantization=self.quantization)
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": self.model_id,
                        "object": "model",
                        "created": self.created,
                        "owned_by": "harness-studio",
                        "engine": engine,
                    }
                ],
            }
        )

    async def server_info(self, _request: Request) -> JSONResponse:
        from starlette.responses import JSONResponse

        return JSONResponse(
            {
                "model_path": str(self.checkpoint),
                "quantization": self.quantization,
                "speculative_algorithm": "EAGLE" if self.backend.draft is not None else None,
                "engine": self.backend.info,
                "internal_states": [self.backend.stats()],
            }
        )

    async def chat(self, request: Request):
        from starlette.responses import StreamingResponse

        try:
            body, agent_request = await self._read(request)
            prompt = self._prompt(body)
        except BadRequest as exc:
            return error(exc.status, str(exc))
        completion = Completion(self.backend, prompt, body, agent_request)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if not body["stream"]:
            return await self._answer(request, completion, completion_id)
        return StreamingResponse(
            self._events(completion, completion_id), media_type="text/event-stream"
        )

    async def _read(self, request: Request) -> tuple[dict[str, Any], str | None]:
        """The checked body and the agent request it belongs to; a request the client says is
        over is ended on the backend here."""
        raw = await read_body(request.stream(), request.headers, timeout_s=self.read_timeout_s)
        body = parse_body(raw, model_id=self.model_id, max_tokens_cap=self.max_tokens_cap)
        agent_request, ended = (
            request_id(request.headers, name) for name in (REQUEST_HEADER, ENDED_HEADER)
        )
        if ended is not None:
            self.backend.request_ended(ended)
        return body, agent_request

    def _prompt(self, body: dict[str, Any]) -> Any:
        """The backend's prompt for the messages, refused (400) when it is over the context (by
        its characters first, then its tokens); ``max_tokens`` is cut to what the context has
        left."""
        context = self.backend.context
        chars = sum(len(str(m.get("content") or "")) for m in body["messages"])
        if chars > context * self.longest_token:
            raise BadRequest(
                f"messages: {chars} characters are more than the {context}-token context holds"
            )
        try:
            prompt = self.backend.prompt(body["messages"], body["tools"])
            n_prompt = self.backend.prompt_tokens(prompt)
        except Exception as exc:  # noqa: BLE001 - a template that cannot render these messages
            raise BadRequest(
                f"messages: the chat template cannot render them ({type(exc).__name__}: {exc})"
            ) from None
        if n_prompt + 1 > context:
            raise BadRequest(
                f"messages: the prompt is {n_prompt} tokens; the context holds {context}"
            )
        body["max_tokens"] = min(body["max_tokens"], context - n_prompt)
        return prompt

    async def _answer(self, request: Request, completion: Completion, completion_id: str):
        """The whole completion in one response; cancelled when the client goes away."""
        from starlette.responses import JSONResponse

        job = completion.start()
        try:
            while not job.done():
                await asyncio.wait({job}, timeout=0.1)
                if not job.done() and await request.is_disconnected():
                    # the client went away: stop prefill or decode at the next step
                    completion.cancel.set()
            done = await job
        except Exception as exc:  # noqa: BLE001
            return error(500, f"engine: {exc}")
        finally:
            completion.cancel.set()
        text = self.tokenizer.decode(done.ids, skip_special_tokens=True)
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model_id,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": finish_reason(done.finish_reason),
                    }
                ],
                "usage": usage(done),
            }
        )

    def _chunk(self, completion_id: str, **fields: Any) -> str:
        """One server-sent event of the stream: a ``chat.completion.chunk`` with ``fields``."""
        chunk = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model_id,
            **fields,
        }
        return "data: " + json.dumps(chunk) + "\n\n"

    async def _events(self, completion: Completion, completion_id: str):
        """The stream: the role, the text deltas, the finish reason, the usage when asked for, then
        ``[DONE]``; an engine error after the stream has started is reported in band."""

        def delta(fields: dict[str, Any], finish: str | None = None) -> str:
            return self._chunk(
                completion_id, choices=[{"index": 0, "delta": fields, "finish_reason": finish}]
            )

        text = TextStream(self.tokenizer)
        job = completion.start()
        try:
            yield delta({"role": "assistant", "content": ""})
            while (tokens := await completion.queue.get()) is not None:
                piece = text.push(tokens)
                if piece:
                    yield delta({"content": piece})
            done = await job
            yield delta({}, finish_reason(done.finish_reason))
            if completion.body["include_usage"]:
                yield self._chunk(completion_id, choices=[], usage=usage(done))
            yield "data: [DONE]\n\n"
        except Exception as exc:  # noqa: BLE001 - the stream has started: report in band
            yield "data: " + json.dumps({"error": {"message": f"engine: {exc}"}}) + "\n\n"
        finally:
            # a client that went away stops its request at the next prefill batch or token
            completion.cancel.set()


def build_app(
    checkpoint: str | Path,
    *,
    quantization: str = "gguf",
    max_tokens_cap: int = 2048,
    model_id: str | None = None,
    draft_head: str | Path | None = None,
    threads: int | None = None,
    read_timeout_s: float = READ_TIMEOUT_S,
) -> Any:
    """The Starlette application serving ``checkpoint`` on llama.cpp or the torch engine."""
    checkpoint = Path(checkpoint).resolve()
    backend = make_backend(
        checkpoint, quantization=quantization, draft_head=draft_head, threads=threads
    )
    return EngineApp(
        backend,
        checkpoint=checkpoint,
        model_id=model_id or str(checkpoint),
        quantization=quantization,
        max_tokens_cap=max_tokens_cap,
        read_timeout_s=read_timeout_s,
    ).starlette()
