"""The CPU serving route: the local engine behind an OpenAI-compatible HTTP endpoint.

``python -m serving engine-server CHECKPOINT [--port N] [--quantization int8] [--draft-head DIR]``
serves ``POST /v1/chat/completions`` (streamed or not), ``GET /v1/models``,
``GET /health`` and ``GET /get_server_info`` (the engine's counters, with the
speculative decoding figures under SGLang's name ``avg_spec_accept_length``, so
the replay reads both routes the same way) from one process whose engine (``harness.engine``) shares the
Harness prefix between requests and decodes concurrent requests in one batch.
The replay's ``cpu-engine`` profile starts it as a managed process
(``serving.transformers_server.EngineServer``), so the deployment replay on CPU
measures the complete agent on the same engine the runtime uses in process.

Prompts are rendered exactly as the runtime's local policy renders them
(``TransformersPolicy.render``: the checkpoint's chat template, tools where the
template takes them). A client that disconnects cancels its request.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from pathlib import Path
from typing import Any

MAX_BODY_BYTES = 4 << 20


class BadRequest(ValueError):
    """The request body is not one this server answers; the message names the field."""


def parse_body(raw: bytes, *, model_id: str, max_tokens_cap: int) -> dict[str, Any]:
    """The fields of a chat-completions body this server uses, validated (``BadRequest`` names the field)."""
    if len(raw) > MAX_BODY_BYTES:
        raise BadRequest(f"body: {len(raw)} bytes is over the {MAX_BODY_BYTES} byte limit")
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"body: not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise BadRequest("body: expected a JSON object with model and messages")
    model = body.get("model")
    if model not in (model_id, None, ""):
        raise BadRequest(f"model: {model!r} is not served here; this server serves {model_id!r}")
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
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or not 1 <= max_tokens <= max_tokens_cap:
        raise BadRequest(f"max_tokens: expected an integer from 1 to {max_tokens_cap}")
    out["max_tokens"] = max_tokens
    for name, low, high, default in (("temperature", 0.0, 2.0, 1.0), ("top_p", 0.0, 1.0, 1.0)):
        value = body.get(name, default)
        if value is None:
            value = default
        if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
            raise BadRequest(f"{name}: expected a number from {low} to {high}")
        out[name] = float(value)
    if out["top_p"] == 0.0:
        raise BadRequest("top_p: expected a number above 0 and at most 1")
    seed = body.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise BadRequest("seed: expected an integer")
    out["seed"] = seed
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise BadRequest("tools: expected a list of tool specs")
    out["tools"] = tools
    options = body.get("stream_options") or {}
    out["include_usage"] = bool(isinstance(options, dict) and options.get("include_usage"))
    return out


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
        before = decode(self.ids[self.prefix: self.read], skip_special_tokens=True)
        after = decode(self.ids[self.prefix:], skip_special_tokens=True)
        if len(after) <= len(before) or after.endswith("\ufffd"):
            return ""
        self.prefix, self.read = self.read, len(self.ids)
        return after[len(before):]


def build_app(checkpoint: str | Path, *, quantization: str = "none", max_tokens_cap: int = 2048,
              model_id: str | None = None, draft_head: str | Path | None = None) -> Any:
    """The Starlette application serving ``checkpoint`` on the local engine."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    from harness.engine import EngineError, SamplingParams
    from harness.policies.local import TransformersPolicy, load_model, stop_ids_of

    checkpoint = Path(checkpoint).resolve()
    model_id = model_id or str(checkpoint)
    policy = TransformersPolicy(checkpoint, engine="engine", quantization=quantization, draft_head=draft_head)
    hf_model, tokenizer = load_model(checkpoint)
    engine = policy.engine()
    stop_ids = stop_ids_of(hf_model, tokenizer)
    created = int(time.time())

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": "invalid_request_error"}}, status_code=status)

    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def models(_request: Request) -> JSONResponse:
        return JSONResponse({"object": "list", "data": [
            {"id": model_id, "object": "model", "created": created, "owned_by": "harness-studio",
             "engine": {"quantization": quantization, "draft_head": str(draft_head) if draft_head else None}}]})

    async def server_info(_request: Request) -> JSONResponse:
        stats = engine.stats
        spec = stats.spec.to_dict() if engine.draft is not None else None
        return JSONResponse({"model_path": str(checkpoint), "quantization": quantization,
                             "speculative_algorithm": "EAGLE" if engine.draft is not None else None,
                             "internal_states": [{
                                 "avg_spec_accept_length": spec["acceptance_length"] if spec else None,
                                 "speculative": spec, "requests": stats.requests,
                                 "prefill_tokens": stats.prefill_tokens, "cached_tokens": stats.cached_tokens,
                                 "decode_steps": stats.decode_steps, "decode_tokens": stats.decode_tokens}]})

    async def chat(request: Request):
        raw = await request.body()
        try:
            body = parse_body(raw, model_id=model_id, max_tokens_cap=max_tokens_cap)
            prompt = policy.render(body["messages"], body["tools"])
        except BadRequest as exc:
            return error(400, str(exc))
        except Exception as exc:  # noqa: BLE001 - a template that cannot render these messages
            return error(400, f"messages: the chat template cannot render them ({type(exc).__name__}: {exc})")
        params = SamplingParams(max_new_tokens=body["max_tokens"], temperature=body["temperature"],
                                top_p=body["top_p"], seed=body["seed"], stop_ids=stop_ids)
        handle = engine.submit(prompt, params)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        loop = asyncio.get_running_loop()

        def usage(done) -> dict[str, Any]:
            return {"prompt_tokens": done.prompt_tokens, "completion_tokens": len(done.ids),
                    "total_tokens": done.prompt_tokens + len(done.ids),
                    "prompt_tokens_details": {"cached_tokens": done.cached_tokens}}

        if not body["stream"]:
            try:
                done = await loop.run_in_executor(None, handle.result)
            except EngineError as exc:
                return error(500, f"engine: {exc}")
            finally:
                handle.cancel()
            text = tokenizer.decode(done.ids, skip_special_tokens=True)
            return JSONResponse({
                "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": model_id,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": _finish(done.finish_reason)}],
                "usage": usage(done)})

        async def events():
            text = _TextStream(tokenizer)

            def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
                return "data: " + json.dumps({
                    "id": completion_id, "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": model_id, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

            try:
                yield chunk({"role": "assistant", "content": ""})
                while True:
                    tokens = await loop.run_in_executor(None, handle.next_tokens)
                    if tokens is None:
                        break
                    delta = text.push(tokens)
                    if delta:
                        yield chunk({"content": delta})
                done = handle.result()
                yield chunk({}, _finish(done.finish_reason))
                if body["include_usage"]:
                    yield "data: " + json.dumps({"id": completion_id, "object": "chat.completion.chunk",
                                                 "created": int(time.time()), "model": model_id,
                                                 "choices": [], "usage": usage(done)}) + "\n\n"
                yield "data: [DONE]\n\n"
            except EngineError as exc:
                yield "data: " + json.dumps({"error": {"message": f"engine: {exc}"}}) + "\n\n"
            finally:
                handle.cancel()  # a client that went away stops its request at the next step

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/health", health), Route("/v1/models", models),
                             Route("/get_server_info", server_info),
                             Route("/v1/chat/completions", chat, methods=["POST"])])


def _finish(reason: str) -> str:
    """The engine's finish reason in OpenAI's words (a deadline or cancel reads as ``length``)."""
    return "stop" if reason == "stop" else "length"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serving engine-server",
                                     description="Serve a checkpoint on the local engine (OpenAI-compatible).")
    add_arguments(parser)
    return run(parser.parse_args(argv))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from harness.engine import QUANTIZATIONS

    parser.add_argument("checkpoint", help="checkpoint folder, or 'default' / 'tiny'")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--quantization", choices=QUANTIZATIONS, default="none",
                        help="engine weights: none (fp32) or int8 (weight-only int8 linears, harness/engine/kernels.py)")
    parser.add_argument("--draft-head", help="decode speculatively with this draft head (python -m training mtp)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--max-tokens-cap", type=int, default=2048, help="largest max_tokens a request may ask for")


def run(args: argparse.Namespace) -> int:
    import torch
    import uvicorn

    from harness.checkpoints import resolve_checkpoint

    if args.threads:
        torch.set_num_threads(args.threads)
    app = build_app(resolve_checkpoint(args.checkpoint), quantization=args.quantization,
                    max_tokens_cap=args.max_tokens_cap, draft_head=args.draft_head)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0
