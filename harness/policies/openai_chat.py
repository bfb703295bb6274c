"""OpenAIChatPolicy: any OpenAI-compatible chat-completions endpoint, streamed.

SGLang on a GPU, vLLM, vendor APIs, or ``transformers serve`` on CPU. Streaming
makes time to first token and decode tokens/s client-observed, per call. The
tool specs are sent natively; when the server returns native tool calls they
are used, otherwise the runtime parses the text protocol from the content.
The API key is ``api_key`` and nothing else: a policy made without one sends a
placeholder, never ``$OPENAI_API_KEY`` from the environment (a keyless studio
endpoint on someone's own server once received the worker's key that way). The
CLIs' ``openai:URL:MODEL`` spec passes ``$OPENAI_API_KEY`` explicitly
(``make_policy``): there the person running the command owns the environment.

Each call names the agent request it belongs to in the header
``X-Harness-Request`` (a random id per request, nothing from the request), and
a request's first call names the request it follows in the same thread in
``X-Harness-Request-Ended``. Servers that do not know them ignore them; this
project's engine server (``serving.engine_server``) uses them as llama.cpp's
in-process policy uses ``begin_request``: a request that is over holds no slot.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from harness.policies.base import (
    GenerationSettings,
    Policy,
    PolicyError,
    PolicyOutput,
    ToolCall,
    decode_rate,
)

#: The agent request a call belongs to, and (on a request's first call) the one before it in its
#: thread.
REQUEST_HEADER = "X-Harness-Request"
ENDED_HEADER = "X-Harness-Request-Ended"


# What a keyless policy sends as its bearer token (the client needs one); no server can learn
# anything from it.
KEYLESS = "not-needed"


class OpenAIChatPolicy(Policy):
    # ``timeout_s`` bounds each streamed call (connect and read); ``retries`` is the client's
    # retries of a failed request. Both are a role's (harness.policies.roles) when the factory
    # builds the policy.
    accepts_timeout = True

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        settings: GenerationSettings | None = None,
        timeout_s: float = 60.0,
        retries: int = 0,
        native_tools: bool = True,
        name: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        from openai import OpenAI

        self.base_url = base_url.rstrip("/")
        self.model = model
        self.settings = settings or GenerationSettings()
        self.native_tools = native_tools
        # Engine-specific request fields (e.g. transformers serve only samples when a
        # generation_config with do_sample is sent); merged into every request body.
        self.extra_body = dict(extra_body or {})
        self.name = name or f"openai:{self.base_url}:{model}"
        self.client = OpenAI(
            base_url=self.base_url,
            api_key=api_key or KEYLESS,
            timeout=timeout_s,
            max_retries=retries,
        )
        self._request = threading.local()  # the agent runs each request in one thread

    def begin_request(self, request_id: str) -> None:
        """A new request in this thread: a new id, and the previous one is sent as ended."""
        previous = getattr(self._request, "id", None)
        self._request.id = uuid.uuid4().hex
        self._request.ended = previous

    def request_headers(self) -> dict[str, str]:
        """The headers of this thread's next call (the ended request is named once)."""
        headers = {}
        if getattr(self._request, "id", None):
            headers[REQUEST_HEADER] = self._request.id
        if getattr(self._request, "ended", None):
            headers[ENDED_HEADER] = self._request.ended
            self._request.ended = None
        return headers

    def generate(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        settings: GenerationSettings | None = None,
        timeout_s: float | None = None,
    ) -> PolicyOutput:
        """One streamed call; ``timeout_s`` bounds this call: connect, each read, and the whole
        stream."""
        from openai import OpenAIError

        settings = settings or self.settings
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": settings.max_new_tokens,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
        }
        if settings.seed is not None:
            body["seed"] = settings.seed
        if tools and self.native_tools:
            body["tools"] = tools
        if self.extra_body:
            body["extra_body"] = self.extra_body
        started = time.perf_counter()
        first_at: float | None = None
        parts: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = None
        finish = ""
        chunks_with_content = 0
        try:
            client = (
                self.client if timeout_s is None else self.client.with_options(timeout=timeout_s)
            )
            stream = client.chat.completions.create(
                **body, extra_headers=self.request_headers() or None
            )
            for chunk in stream:
                if timeout_s is not None and time.perf_counter() - started > timeout_s:
                    # the client's timeout bounds each read, not the call: a stream that keeps
                    # sending would run past the budget. Closing it stops the server's request.
                    stream.close()
                    finish = "timeout"
                    break
                if getattr(chunk, "usage", None):
                    usage = chunk.usage
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if choice.finish_reason:
                        finish = choice.finish_reason
                    if delta is None:
                        continue
                    got = False
                    # Reasoning parsers (SGLang, vLLM) stream the thinking separately;
                    # it is the first output the client sees, so it starts TTFT.
                    thought = getattr(delta, "reasoning_content", None) or (
                        (delta.model_extra or {}).get("reasoning_content")
                    )
                    if thought:
                        reasoning.append(thought)
                        chunks_with_content += 1
                        got = True
                    if delta.content:
                        parts.append(delta.content)
                        chunks_with_content += 1
                        got = True
                    for tc in delta.tool_calls or []:
                        slot = calls.setdefault(
                            tc.index or 0, {"id": "", "name": "", "arguments": ""}
                        )
                        if tc.id:
                            slot["id"] = tc.id
                        if tc.function and tc.function.name:
                            slot["name"] += tc.function.name
                        if tc.function and tc.function.arguments:
                            slot["arguments"] += tc.function.arguments
                        got = True
                    if got and first_at is None:
                        first_at = time.perf_counter()
        except OpenAIError as exc:
            raise PolicyError(f"{self.base_url}: {type(exc).__name__}: {exc}") from exc
        latency = time.perf_counter() - started
        text = "".join(parts)
        if reasoning:  # kept in the trajectory; the runtime strips it from the reply
            text = f"<think>{''.join(reasoning)}</think>{text}"
        native = []
        for _, slot in sorted(calls.items()):
            try:
                args = json.loads(slot["arguments"]) if slot["arguments"].strip() else {}
            except json.JSONDecodeError:
                # Left for the runtime's feedback: render it as a text-protocol call.
                text += (
                    f'<tool_call>{{"name": "{slot["name"]}", '
                    f'"arguments": {slot["arguments"]}}}</tool_call>'
                )
                continue
            native.append(
                ToolCall(slot["name"], args if isinstance(args, dict) else {}, slot["id"])
            )
        out_tokens = getattr(usage, "completion_tokens", None) or chunks_with_content
        in_tokens = getattr(usage, "prompt_tokens", None) or 0
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        ttft = (first_at - started) if first_at else None
        return PolicyOutput(
            text=text,
            tool_calls=native,
            input_tokens=int(in_tokens),
            output_tokens=int(out_tokens),
            latency_s=latency,
            ttft_s=ttft,
            decode_tokens_per_s=decode_rate(int(out_tokens), ttft, latency),
            finish_reason=finish,
            usage_reported=usage is not None,
            cached_tokens=None if cached is None else int(cached),
        )
