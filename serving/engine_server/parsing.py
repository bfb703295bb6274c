"""A chat-completions request as the engine server takes it: the body read within its bounds, its
fields checked by name (``BadRequest`` says which field and what is valid), the agent request ids
of its headers."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

MAX_BODY_BYTES = 4 << 20
_REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
READ_TIMEOUT_S = 10.0
MAX_SEED = 2**32 - 1  # llama.cpp's seed is 32-bit; the torch engine takes the same range


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
