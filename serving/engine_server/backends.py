"""The two engines behind the engine server, one interface (``Backend``): llama.cpp in process
(``LlamaBackend``: the GGUF formats) and the project's torch engine (``TorchBackend``: fp32, int8
and speculative decoding with our draft head); ``make_backend`` picks one by quantization."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from serving.gguf import QUANTIZATIONS as GGUF_QUANTIZATIONS

#: Agent requests whose slot ownership the server remembers (the oldest is forgotten first).
KNOWN_REQUESTS = 1024
TORCH_QUANTIZATIONS = ("none", "int8")
# "gguf": the route's own format ($HARNESS_GGUF_QUANTIZATION, else Q8_0; the shipped file for the
# default model)
GGUF_CHOICES = ("gguf", *GGUF_QUANTIZATIONS)
QUANTIZATIONS = GGUF_CHOICES + TORCH_QUANTIZATIONS


@dataclass
class Result:
    prompt_tokens: int
    ids: list[int]
    finish_reason: str
    cached_tokens: int


class Backend:
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


class LlamaBackend(Backend):
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


class TorchBackend(Backend):
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
) -> Backend:
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization: {quantization!r} is not one of {', '.join(QUANTIZATIONS)}")
    if draft_head and quantization in GGUF_CHOICES:
        quantization = "none"  # our draft head runs on the torch engine only
    if quantization in TORCH_QUANTIZATIONS:
        return TorchBackend(checkpoint, quantization, draft_head)
    return LlamaBackend(checkpoint, quantization, threads)
