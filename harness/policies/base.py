"""The policy base class: messages (+ tool specs) in, text and tool calls out.

Every model the runtime can drive (a local transformers model, an
OpenAI-compatible endpoint, a scripted test double, training's sampling policy)
subclasses ``Policy``: it implements ``generate`` and may override the optional
members, which are declared here with no-op defaults so the runtime calls them
directly instead of probing for them.
A policy never parses the text tool-call protocol itself: it returns the raw
text plus any *native* tool calls the server returned, and the runtime does the
rest (see ``harness.policies.text_protocol``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class ToolCall:
    """A tool call proposed by the model."""

    name: str
    arguments: dict[str, Any]
    id: str = ""  # the server's id for native calls; empty for the text protocol

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.id:
            data["id"] = self.id
        return data

    def to_openai(self, call_id: str) -> dict[str, Any]:
        """The call as an assistant message's ``tool_calls`` entry (OpenAI chat format) under
        ``call_id``: what a native tool-calling model is shown of its own call."""
        return {
            "id": call_id,
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": json.dumps(self.arguments, ensure_ascii=False),
            },
        }


@dataclass
class GenerationSettings:
    """Sampling settings one model call uses."""

    temperature: float = 0.0  # 0: greedy
    top_p: float = 1.0
    max_new_tokens: int = 256
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class PolicyOutput:
    """What one model call produced, with client-observed timings."""

    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)  # native calls only
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    ttft_s: float | None = None  # time to first token
    decode_tokens_per_s: float | None = None  # output tokens after the first / decode time
    finish_reason: str = ""
    # False when the server sent no usage and output_tokens counts streamed chunks.
    usage_reported: bool = True
    # Prompt tokens the model's server took from its prefix cache rather than prefilling (None: not
    # reported).
    cached_tokens: int | None = None


class PolicyError(RuntimeError):
    """A model call failed (server down, bad response, script exhausted)."""


class Policy:
    """Turns chat messages (+ optional tool specs) into text and tool calls.

    Subclasses implement ``generate``; ``name``, ``accepts_timeout``, ``begin_request`` and
    ``prepare`` are optional, with the defaults below.
    """

    #: What trajectories record as the policy (e.g. ``local:final``); empty: the class name.
    name: str = ""
    #: True when ``generate`` takes ``timeout_s``: the agent then passes the time left in the
    #: trajectory budget, and the call must stop there (a remote or local model must not outlive
    #: it).
    accepts_timeout: ClassVar[bool] = False

    def begin_request(self, request_id: str) -> None:
        """Called by the agent before each request (a scripted policy rewinds its script). No-op."""

    def prepare(
        self, shared_prefix: str = "", *, tools: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Called by the agent after ``begin_request``, before the request's trajectory budget
        starts: load the model if it is not loaded, and where the policy keeps a prefix cache, put
        in it ``shared_prefix``, the text every request's system message starts with (rendered as
        ``generate`` would render it with ``tools``). Returns what it did, for the trajectory's
        ``timings["setup"]``. No-op."""
        return {}

    def generate(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        settings: GenerationSettings | None = None,
    ) -> PolicyOutput:
        """One model call. ``tools`` are OpenAI-style function specs (for native calling)."""
        raise NotImplementedError(f"{type(self).__name__} must implement generate()")


def decode_rate(output_tokens: int, ttft_s: float | None, latency_s: float) -> float | None:
    """Client-observed decode speed: tokens after the first over the time after it."""
    if ttft_s is None or output_tokens < 2 or latency_s <= ttft_s:
        return None
    return (output_tokens - 1) / (latency_s - ttft_s)
