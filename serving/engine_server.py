"""The CPU serving route: a local model behind an OpenAI-compatible HTTP endpoint.

``python -m serving engine-server CHECKPOINT [--port N] [--quantization gguf|Q8_0|...|none|int8]
[--draft-head DIR]`` serves ``POST /v1/chat/completions`` (streamed or not), ``GET /v1/models``,
``GET /health`` and ``GET /get_server_info`` (counters, with the speculative decoding figures under
SGLang's name ``avg_spec_accept_length``, so the replay reads both routes the same way).

Two engines answer, chosen by ``--quantization``:

- ``gguf`` (the default) or a GGUF format (``Q8_0``, ``Q4_1``, ...): llama.cpp in process
  (``serving.llama_cpp``): slots decoded together, each slot's prompt cache, the prompt
  sent as the token ids the runtime's local policy renders;
- ``none`` (fp32) or ``int8``, and any ``--draft-head``: the project's torch engine
  (``serving.engine``), for the fp32 reference, int8 weights and speculative decoding with our head.

A call may name the agent request it belongs to (``X-Harness-Request``) and, on a request's
first call, the request before it in the client's thread (``X-Harness-Request-Ended``); the
agent's client sends both (``OpenAIChatPolicy``). On llama.cpp they do what ``begin_request``
does in process: a request's slot is held for its next call, and a request that is over holds
nothing, so the next request may reuse that slot's Harness prefix at once. Without them a slot
is held for ``HOLD_S`` after each call. ``get_server_info`` counts the open and ended requests.

The replay's ``cpu-engine`` profiles start it as a managed process
(``serving.transformers_server.EngineServer``), so the deployment replay on CPU measures the
complete agent on the same engine the runtime uses in process.

Bounds (docs/security.md): a body is refused by its ``Content-Length`` before it is read, and while
it is read, past ``MAX_BODY_BYTES`` (413); a body not received within ``READ_TIMEOUT_S`` is a 408; a
prompt longer than the context is a 400 before any prefill (a cheap bound on characters first, then
the token count); uvicorn answers 503 past ``--max-connections``; a client that goes away cancels
its request, during prefill as well as decode. A connection whose request headers are not complete
within ``HEADER_TIMEOUT_S`` is answered 408 and closed, and one client address holds at most
``MAX_CONNECTIONS_PER_CLIENT`` connections (more get a 503 at once): 64 sockets that sent only a
request line and a ``Host`` header once held every slot, and every other client got 503 for 30 s or
more (``GuardedH11Protocol``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.policies.openai_chat import ENDED_HEADER, REQUEST_HEADER
from serving.gguf import QUANTIZATIONS as GGUF_QUANTIZATIONS

MAX_BODY_BYTES = 4 << 20
#: Agent requests whose slot ownership the server remembers (the oldest is forgotten first).
KNOWN_REQUESTS = 1024
_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
READ_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 64
HEADER_TIMEOUT_S = 5.0
MAX_CONNECTIONS_PER_CLIENT = 16
MAX_SEED = 2**32 - 1  # llama.cpp's seed is 32-bit; the torch engine takes the same range
TORCH_QUANTIZATIONS = ("none", "int8")
# "gguf": the route's own format ($HARNESS_GGUF_QUANTIZATION, else Q8_0; the shipped file for the
# default model)
GGUF_CHOICES = ("gguf", *GGUF_QUANTIZATIONS)
QUANTIZATIONS = GGUF_CHOICES + TORCH_QUANTIZATIONS


class BadRequest(ValueError):
    """The request body is not one this server answers; the message names the field."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def parse_body(raw: bytes, *, model_id: str, max_tokens_cap: int) -> dict[str, Any]:
    """The fields of a chat-completions body this server uses, validated (``BadRequest`` names the
    field)."""
    if len(raw) > MAX_BODY_BYTES:
        raise BadRequest(f"body: {len(raw)} bytes is over the {MAX_BODY_BYTES} byte limit", 413)
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise BadRequest(f"body: not JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object with model and messages")
    model = body.get("model")
    if model not in (model_id, None, ""):
        raise BadRequest(
            f"model: {str(model)[:200]!r} is not served here; this server serves {model_id!r}"
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: expected a non-empty list of {role, content} objects")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("system", "user", "assistant", "tool"):
            raise BadRequest(f"messages[{i}].role: expected system, user, assistant or tool")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            raise BadRequest(f"messages[{i}].content: expected a string")
    out: dict[str, Any] = {"messages": messages, "stream": bool(body.get("stream", False))}
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is None:
        max_tokens = max_tokens_cap
    if (
        not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
        or not 1 <= max_tokens <= max_tokens_cap
    ):
        raise BadRequest(f"max_tokens: expected an integer from 1 to {max_tokens_cap}")
    out["max_tokens"] = max_tokens
    for name, low, high, default in (("temperature", 0.0, 2.0, 1.0), ("top_p", 0.0, 1.0, 1.0)):
        value = body.get(name, default)
        if value is None:
            value = default
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not low <= value <= high
        ):
            raise BadRequest(f"{name}: expected a number from {low} to {high}")
        out[name] = float(value)
    if out["top_p"] == 0.0:
        raise BadRequest("top_p: expected a number above 0 and at most 1")
    seed = body.get("seed")
    if seed is not None and (
        not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED
    ):
        raise BadRequest(f"seed: expected an integer from 0 to {MAX_SEED}")
    out["seed"] = seed
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise BadRequest("tools: expected a list of tool specs")
    out["tools"] = tools
    options = body.get("stream_options") or {}
    out["include_usage"] = bool(isinstance(options, dict) and options.get("include_usage"))
    return out


def request_id(headers, name: str) -> str | None:
    """An agent request id header (``OpenAIChatPolicy`` sends them), or None when absent."""
    value = headers.get(name)
    if value is None:
        return None
    if not _REQUEST_ID.fullmatch(value):
        raise BadRequest(f"{name}: expected 1-64 letters, digits, '-' or '_'")
    return value


async def read_body(
    receive_stream, headers, *, limit: int = MAX_BODY_BYTES, timeout_s: float = READ_TIMEOUT_S
) -> bytes:
    """The request body, refused by its Content-Length before reading (413), past ``limit`` while
    reading (413), or when it has not all arrived within ``timeout_s`` (408)."""
    declared = headers.get("content-length")
    if declared is not None:
        if not declared.isascii() or not declared.isdigit() or len(declared) > 20:
            raise BadRequest("Content-Length: expected a whole number of bytes")
        if int(declared) > limit:
            raise BadRequest(f"body: Content-Length {declared} is over the {limit} byte limit", 413)
    chunks: list[bytes] = []
    total = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in receive_stream:
                total += len(chunk)
                if total > limit:
                    raise BadRequest(f"body: over the {limit} byte limit", 413)
                chunks.append(chunk)
    except TimeoutError:
        raise BadRequest(f"body: not received within {timeout_s:g} s", 408) from None
    return b"".join(chunks)


class _TextStream:
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


@dataclass
class Result:
    prompt_tokens: int
    ids: list[int]
    finish_reason: str
    cached_tokens: int


class _Backend:
    """One engine behind the server: ``context`` tokens per request; ``run`` blocks its thread."""

    context: int
    tokenizer: Any
    info: dict[str, Any]

    def prompt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        raise NotImplementedError

    def prompt_tokens(self, prompt: Any) -> int:
        raise NotImplementedError

    def run(
        self,
        prompt: Any,
        body: dict[str, Any],
        cancel: threading.Event,
        on_tokens: Callable[[list[int]], None],
        request: str | None = None,
    ) -> Result:
        """``request``: the agent request the call belongs to (``X-Harness-Request``), or None."""
        raise NotImplementedError

    def request_ended(self, request: str) -> None:
        """The client's request ``request`` is over (``X-Harness-Request-Ended``)."""

    def stats(self) -> dict[str, Any]:
        raise NotImplementedError


class _LlamaBackend(_Backend):
    def __init__(self, checkpoint: Path, quantization: str, threads: int | None) -> None:
        from serving.gguf import default_quantization, gguf_for_checkpoint
        from serving.llama_cpp import LlamaCppPolicy, llama_server_for

        fmt = default_quantization() if quantization == "gguf" else quantization
        gguf = gguf_for_checkpoint(checkpoint, quantization=fmt)
        self.server = llama_server_for(gguf, threads=threads)
        self.policy = LlamaCppPolicy(checkpoint, gguf=gguf, server=self.server)
        self.tokenizer = self.policy.tokenizer
        self.context = self.server.slot_context
        self.info = {
            "engine": "llama.cpp",
            "gguf": str(gguf),
            "slots": self.server.slots,
            "slot_context": self.context,
            "flash_attn": self.server.flash_attn,
        }
        self.draft = None
        self._owners: OrderedDict[str, Any] = (
            OrderedDict()
        )  # request id -> its RequestOwner, newest last
        self._owners_lock = threading.Lock()
        self._ended = 0

    def _owner(self, request: str | None):
        from serving.llama_cpp import RequestOwner

        if request is None:
            return None
        with self._owners_lock:
            owner = self._owners.get(request)
            if owner is None:
                owner = self._owners[request] = RequestOwner()
                while len(self._owners) > KNOWN_REQUESTS:
                    self._owners.popitem(last=False)
            self._owners.move_to_end(request)
            return owner

    def request_ended(self, request: str) -> None:
        with self._owners_lock:
            owner = self._owners.pop(request, None)
            self._ended += owner is not None
        if owner is not None:
            self.server.release(owner)

    def prompt(self, messages, tools):
        return messages, tools

    def run(self, prompt, body, cancel, on_tokens, request=None) -> Result:
        from harness.policies import GenerationSettings

        messages, tools = prompt
        settings = GenerationSettings(
            temperature=body["temperature"],
            top_p=body["top_p"],
            max_new_tokens=body["max_tokens"],
            seed=body["seed"],
        )
        done = self.policy.complete(
            messages,
            tools=tools,
            settings=settings,
            cancel=cancel,
            on_tokens=lambda ids, _text: on_tokens(ids),
            owner=self._owner(request),
        )
        return Result(done.prompt_tokens, done.ids, done.finish_reason, done.cached_tokens)

    def prompt_tokens(self, prompt) -> int:
        return len(self.policy.prompt_ids(*prompt)[1])

    def stats(self) -> dict[str, Any]:
        with self._owners_lock:
            requests = {
                "agent_requests_open": len(self._owners),
                "agent_requests_ended": self._ended,
            }
        return {**self.server.stats.to_dict(), **requests}


class _TorchBackend(_Backend):
    def __init__(self, checkpoint: Path, quantization: str, draft_head: str | Path | None) -> None:
        from serving.engine.policy import TransformersPolicy, load_model, stop_ids_of

        self.policy = TransformersPolicy(
            checkpoint, engine="engine", quantization=quantization, draft_head=draft_head
        )
        hf_model, self.tokenizer = load_model(checkpoint)
        self.engine = self.policy.engine()
        self.draft = self.engine.draft
        self.stop_ids = stop_ids_of(hf_model, self.tokenizer)
        self.context = int(getattr(hf_model.config, "max_position_embeddings", 2048))
        self.info = {
            "engine": "torch",
            "quantization": quantization,
            "draft_head": str(draft_head) if draft_head else None,
        }

    def prompt(self, messages, tools):
        return self.policy.render(messages, tools)

    def prompt_tokens(self, prompt) -> int:
        return len(prompt)

    def run(self, prompt, body, cancel, on_tokens, request=None) -> Result:
        from serving.engine import EngineError, SamplingParams

        params = SamplingParams(
            max_new_tokens=body["max_tokens"],
            temperature=body["temperature"],
            top_p=body["top_p"],
            seed=body["seed"],
            stop_ids=self.stop_ids,
        )
        handle = self.engine.submit(prompt, params)
        watcher = threading.Thread(target=lambda: (cancel.wait(), handle.cancel()), daemon=True)
        watcher.start()
        try:
            while (tokens := handle.next_tokens()) is not None:
                on_tokens(tokens)
            done = handle.result()
        except EngineError as exc:
            raise RuntimeError(f"engine: {exc}") from exc
        finally:
            cancel.set()  # ends the watcher
        return Result(done.prompt_tokens, done.ids, done.finish_reason, done.cached_tokens)

    def stats(self) -> dict[str, Any]:
        stats = self.engine.stats
        spec = stats.spec.to_dict() if self.draft is not None else None
        return {
            "avg_spec_accept_length": spec["acceptance_length"] if spec else None,
            "speculative": spec,
            "requests": stats.requests,
            "prefill_tokens": stats.prefill_tokens,
            "cached_tokens": stats.cached_tokens,
            "decode_steps": stats.decode_steps,
            "decode_tokens": stats.decode_tokens,
        }


def make_backend(
    checkpoint: Path,
    *,
    quantization: str = "gguf",
    draft_head: str | Path | None = None,
    threads: int | None = None,
) -> _Backend:
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization: {quantization!r} is not one of {', '.join(QUANTIZATIONS)}")
    if draft_head and quantization in GGUF_CHOICES:
        quantization = "none"  # our draft head runs on the torch engine only
    if quantization in TORCH_QUANTIZATIONS:
        return _TorchBackend(checkpoint, quantization, draft_head)
    return _LlamaBackend(checkpoint, quantization, threads)


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
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    checkpoint = Path(checkpoint).resolve()
    model_id = model_id or str(checkpoint)
    backend = make_backend(
        checkpoint, quantization=quantization, draft_head=draft_head, threads=threads
    )
    tokenizer = backend.tokenizer
    # a token is at most this many characters, so a longer text is over the context without
    # tokenizing it
    longest_token = max(len(t) for t in tokenizer.get_vocab()) + 1
    created = int(time.time())

    def error(status: int, message: str) -> JSONResponse:
        kind = "invalid_request_error" if status < 500 else "server_error"
        return JSONResponse(
            {"error": {"message": message, "type": kind, "code": status}},
            status_code=status,
            headers={"Connection": "close"} if status in (408, 413) else None,
        )

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def models(_request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {
                        "id": model_id,
                        "object": "model",
                        "created": created,
                        "owned_by": "harness-studio",
                        "engine": dict(backend.info, quantization=quantization),
                    }
                ],
            }
        )

    async def server_info(_request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "model_path": str(checkpoint),
                "quantization": quantization,
                "speculative_algorithm": "EAGLE" if backend.draft is not None else None,
                "engine": backend.info,
                "internal_states": [backend.stats()],
            }
        )

    async def chat(request: Request):
        try:
            raw = await read_body(request.stream(), request.headers, timeout_s=read_timeout_s)
            body = parse_body(raw, model_id=model_id, max_tokens_cap=max_tokens_cap)
            agent_request, ended = (
                request_id(request.headers, name) for name in (REQUEST_HEADER, ENDED_HEADER)
            )
        except BadRequest as exc:
            return error(exc.status, str(exc))
        if ended is not None:
            backend.request_ended(ended)
        chars = sum(len(str(m.get("content") or "")) for m in body["messages"])
        if chars > backend.context * longest_token:
            return error(
                400,
                f"messages: {chars} characters are more than "
                f"the {backend.context}-token context holds",
            )
        try:
            prompt = backend.prompt(body["messages"], body["tools"])
            n_prompt = backend.prompt_tokens(prompt)
        except Exception as exc:  # noqa: BLE001 - a template that cannot render these messages
            return error(
                400, f"messages: the chat template cannot render them ({type(exc).__name__}: {exc})"
            )
        if n_prompt + 1 > backend.context:
            return error(
                400,
                f"messages: the prompt is {n_prompt} tokens; the context holds {backend.context}",
            )
        body["max_tokens"] = min(body["max_tokens"], backend.context - n_prompt)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        loop = asyncio.get_running_loop()
        cancel = threading.Event()
        queue: asyncio.Queue = asyncio.Queue()

        def on_tokens(tokens: list[int]) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, list(tokens))

        def work() -> Result:
            try:
                return backend.run(prompt, body, cancel, on_tokens, request=agent_request)
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, None)

        def usage(done: Result) -> dict[str, Any]:
            return {
                "prompt_tokens": done.prompt_tokens,
                "completion_tokens": len(done.ids),
                "total_tokens": done.prompt_tokens + len(done.ids),
                "prompt_tokens_details": {"cached_tokens": done.cached_tokens},
            }

        if not body["stream"]:
            job = loop.run_in_executor(None, work)
            try:
                while not job.done():
                    await asyncio.wait({job}, timeout=0.1)
                    if not job.done() and await request.is_disconnected():
                        # the client went away: stop prefill or decode at the next step
                        cancel.set()
                done = await job
            except Exception as exc:  # noqa: BLE001
                return error(500, f"engine: {exc}")
            finally:
                cancel.set()
            text = tokenizer.decode(done.ids, skip_special_tokens=True)
            return JSONResponse(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model_id,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": _finish(done.finish_reason),
                        }
                    ],
                    "usage": usage(done),
                }
            )

        async def events():
            text = _TextStream(tokenizer)
            job = loop.run_in_executor(None, work)

            def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
                return (
                    "data: "
                    + json.dumps(
                        {
                            "id": completion_id,
                            "object": "chat.completion.chunk",
                            "created": int(time.time()),
                            "model": model_id,
                            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                        }
                    )
                    + "\n\n"
                )

            try:
                yield chunk({"role": "assistant", "content": ""})
                while (tokens := await queue.get()) is not None:
                    delta = text.push(tokens)
                    if delta:
                        yield chunk({"content": delta})
                done = await job
                yield chunk({}, _finish(done.finish_reason))
                if body["include_usage"]:
                    yield (
                        "data: "
                        + json.dumps(
                            {
                                "id": completion_id,
                                "object": "chat.completion.chunk",
                                "created": int(time.time()),
                                "model": model_id,
                                "choices": [],
                                "usage": usage(done),
                            }
                        )
                        + "\n\n"
                    )
                yield "data: [DONE]\n\n"
            except Exception as exc:  # noqa: BLE001 - the stream has started: report in band
                yield "data: " + json.dumps({"error": {"message": f"engine: {exc}"}}) + "\n\n"
            finally:
                # a client that went away stops its request at the next prefill batch or token
                cancel.set()

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/v1/models", models),
            Route("/get_server_info", server_info),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


def _finish(reason: str) -> str:
    """The engine's finish reason in OpenAI's words (a deadline or cancel reads as ``length``)."""
    return "stop" if reason == "stop" else "length"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m serving engine-server",
        description="Serve a checkpoint on the CPU route (OpenAI-compatible).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a {kind.__name__}; give a number above 0"
            ) from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r}: give a number above 0")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="checkpoint folder, or 'default' / 'tiny'")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default="gguf",
        help="gguf (llama.cpp: the shipped Q4_1 file for the default model, a Q8_0 export "
        "otherwise) or a GGUF format to export to; none (fp32) or int8: the torch engine",
    )
    parser.add_argument(
        "--draft-head",
        help="decode speculatively with this draft head (python -m training mtp; the torch engine)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads (default: the engine's choice)"
    )
    parser.add_argument(
        "--max-tokens-cap", type=int, default=2048, help="largest max_tokens a request may ask for"
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="connections and requests at once; more get a 503",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT_S,
        help="seconds a request body may take to arrive (then 408)",
    )
    parser.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=HEADER_TIMEOUT_S,
        help="seconds a request's headers may take to arrive (then 408 and the connection closes)",
    )
    parser.add_argument(
        "--max-connections-per-client",
        type=_positive(int),
        default=MAX_CONNECTIONS_PER_CLIENT,
        help="connections one client address may hold at once; more get a 503",
    )


def guarded_protocol(*, header_timeout_s: float, per_client: int) -> type:
    """uvicorn's h11 protocol with a header timeout and a per-client connection cap (one class per
    server: the count of open connections per client address is shared by its connections)."""
    from collections import Counter

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    open_by_client: Counter[str] = Counter()

    def _refuse(transport, status: int, message: str) -> None:
        body = json.dumps(
            {"error": {"message": message, "type": "invalid_request_error", "code": status}}
        ).encode()
        phrase = {408: b"Request Timeout", 503: b"Service Unavailable"}[status]
        transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (status, phrase, len(body), body)
        )
        transport.close()

    class GuardedH11Protocol(H11Protocol):
        _counted = False
        _header_timer = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._client_host = self.client[0] if self.client else ""
            if open_by_client[self._client_host] >= per_client:
                _refuse(
                    transport,
                    503,
                    f"this client already holds {per_client} connections (the limit per "
                    "client); reuse one or close one",
                )
                return
            open_by_client[self._client_host] += 1
            self._counted = True
            self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            self._cancel_header_timer()
            self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _cancel_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            waiting = self.cycle is None or self.cycle.response_complete
            if waiting and not self.transport.is_closing():
                if self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
                    self.transport.close()  # an idle keep-alive connection: nothing was started
                else:
                    _refuse(
                        self.transport,
                        408,
                        f"request headers not received within {header_timeout_s:g} s",
                    )

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                # a request's headers are in; its body has read_body's timeout
                self._cancel_header_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm_header_timer()  # the next request's headers get the same bound

        def connection_lost(self, exc) -> None:
            self._cancel_header_timer()
            if self._counted:
                self._counted = False
                open_by_client[self._client_host] -= 1
                if open_by_client[self._client_host] <= 0:
                    del open_by_client[self._client_host]
            super().connection_lost(exc)

    return GuardedH11Protocol


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from harness.checkpoints import resolve_checkpoint
    from serving.llama_cpp import close_all, stop_all_calls

    class StoppingServer(uvicorn.Server):
        """On SIGTERM or Ctrl-C uvicorn waits for its open responses; the running llama.cpp calls
        are stopped first, so those end at llama.cpp's next prefill batch or token rather than at
        ``max_tokens``."""

        def handle_exit(self, sig, frame) -> None:
            stop_all_calls()  # sets events only: safe in a signal handler
            super().handle_exit(sig, frame)

    if args.threads and (args.quantization in TORCH_QUANTIZATIONS or args.draft_head):
        # the torch engine's threads; llama.cpp takes them as a parameter (2 s of start-up saved)
        import torch

        torch.set_num_threads(args.threads)
    app = build_app(
        resolve_checkpoint(args.checkpoint),
        quantization=args.quantization,
        max_tokens_cap=args.max_tokens_cap,
        draft_head=args.draft_head,
        threads=args.threads,
        read_timeout_s=args.read_timeout,
    )
    http = guarded_protocol(
        header_timeout_s=args.header_timeout, per_client=args.max_connections_per_client
    )
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        http=http,
        limit_concurrency=args.max_connections,
        timeout_keep_alive=5,
    )
    for sig in (
        signal.SIGTERM,
        signal.SIGINT,
    ):  # uvicorn hands the signal it stopped for back to this
        signal.signal(
            sig, lambda *_: None
        )  # handler when it is done: the server then exits 0 below
    StoppingServer(config).run()
    close_all()  # join the llama.cpp threads of the stopped calls before the interpreter exits
    return 0
