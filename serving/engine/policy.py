"""TransformersPolicy: a local transformers checkpoint on CPU (or whatever torch has).

Loads the checkpoint once per process (shared between policies that name the
same folder) and renders messages with the model's chat template. Generation
runs on the process's local engine for that checkpoint (``serving.engine``):
the Harness prefix is computed once and shared by every request and thread,
concurrent calls are decoded together in one batch, and the time budget stops
decoding at the deadline. Checkpoints the engine does not implement (not a
Llama-family layout) fall back to transformers' own ``generate``, as does
``engine="transformers"`` (the plain path benchmarks compare against).

Time to first token is measured from the call, so local numbers are comparable
with the client-observed numbers of ``OpenAIChatPolicy``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from harness.policies.base import GenerationSettings, Policy, PolicyError, PolicyOutput, decode_rate

ENGINE_CHOICES = ("auto", "engine", "transformers")
#: The engine's weights for local policies: ``none`` (fp32, the checkpoint's own numbers) or
#: ``int8``.
QUANTIZATION_ENV = "HARNESS_ENGINE_QUANTIZATION"


def default_quantization() -> str:
    from harness.policies.factory import env_choice
    from serving.engine.model import QUANTIZATIONS

    return env_choice(QUANTIZATION_ENV, QUANTIZATIONS, "none")


_LOADED: dict[str, tuple[Any, Any]] = {}
_LOAD_LOCK = threading.Lock()


def load_model(model_dir: str | Path) -> tuple[Any, Any]:
    """(model, tokenizer) for a checkpoint folder, loaded once per process."""
    key = str(Path(model_dir).resolve())
    with _LOAD_LOCK:
        if key not in _LOADED:
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(key)
            model = AutoModelForCausalLM.from_pretrained(key)
            model.eval()
            _LOADED[key] = (model, tokenizer)
        return _LOADED[key]


class _FirstTokenClock:
    """A generation streamer that notes when the first new token arrives."""

    def __init__(self) -> None:
        self.puts = 0
        self.first_token_at: float | None = None

    def put(self, value: Any) -> None:
        self.puts += 1
        if self.puts == 2 and self.first_token_at is None:  # put #1 is the prompt
            self.first_token_at = time.perf_counter()

    def end(self) -> None:
        pass


class TransformersPolicy(Policy):
    """A local model. Tools are rendered into the prompt by the runtime (text protocol)."""

    # generation stops at ``timeout_s``, as a streamed remote call does, instead of running to
    # max_new_tokens past the trajectory budget
    accepts_timeout = True

    def __init__(
        self,
        model_dir: str | Path,
        *,
        name: str | None = None,
        settings: GenerationSettings | None = None,
        engine: Any = "auto",
        quantization: str | None = None,
        draft_head: str | Path | None = None,
    ) -> None:
        """``engine``: ``auto`` (the local engine where it supports the checkpoint), ``engine``
        (required), ``transformers`` (plain ``generate``) or an ``serving.engine.Engine`` to use.
        ``draft_head``: decode speculatively with this head (``python -m training mtp``)."""
        if isinstance(engine, str) and engine not in ENGINE_CHOICES:
            raise ValueError(f"engine: {engine!r} is not one of {', '.join(ENGINE_CHOICES)}")
        self.model_dir = Path(model_dir)
        self.name = name or f"local:{self.model_dir.name}"
        self.settings = settings or GenerationSettings()
        self.quantization = quantization or default_quantization()
        self._engine_choice = engine
        self._engine: Any = None if isinstance(engine, str) else engine
        self.draft_head = Path(draft_head) if draft_head else None
        if self.draft_head is not None and engine == "transformers":
            raise ValueError(
                "draft_head: speculative decoding runs on "
                "the local engine, not engine='transformers'"
            )
        self.last_cached_tokens = 0  # prompt tokens the last call took from the prefix store

    def engine(self) -> Any:
        """The engine this policy generates with, or None for transformers' generate."""
        if self._engine is None and self._engine_choice in ("auto", "engine"):
            from serving.engine import UnsupportedModel, engine_for

            try:
                self._engine = engine_for(
                    self.model_dir, quantization=self.quantization, draft_head=self.draft_head
                )
            except UnsupportedModel:
                if (
                    self._engine_choice == "engine"
                    or self.quantization != "none"
                    or self.draft_head
                ):
                    # asked for the engine (or its int8 weights): say why not, do not fall back
                    raise
                self._engine_choice = "transformers"
        return self._engine

    def prepare(
        self, shared_prefix: str = "", *, tools: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Before a request's budget: load the checkpoint and its engine (once per process). The
        engine's prefix store keeps the Harness prefix from the first request on (in memory)."""
        started = time.perf_counter()
        load_model(self.model_dir)
        self.engine()
        return {"load_s": time.perf_counter() - started}

    def render(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """The prompt's token ids: the chat template with the generation prompt."""
        _model, tokenizer = load_model(self.model_dir)
        chat = [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages]
        kwargs: dict[str, Any] = {}
        if tools and "tools" in (tokenizer.chat_template or ""):
            kwargs["tools"] = tools
        encoded = tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_dict=True, **kwargs
        )
        return list(encoded["input_ids"])

    def generate(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        settings: GenerationSettings | None = None,
        timeout_s: float | None = None,
    ) -> PolicyOutput:
        settings = settings or self.settings
        started = time.perf_counter()
        _model, tokenizer = load_model(self.model_dir)
        prompt = self.render(messages, tools)
        engine = self.engine()
        if engine is None:
            ids, finish, first_token_at = self._generate_plain(prompt, settings, started, timeout_s)
            self.last_cached_tokens = 0
        else:
            from serving.engine import EngineError, SamplingParams

            params = SamplingParams(
                max_new_tokens=settings.max_new_tokens,
                temperature=settings.temperature,
                top_p=settings.top_p,
                seed=settings.seed,
                stop_ids=stop_ids_of(_model, tokenizer),
                deadline=None if timeout_s is None else started + max(0.01, timeout_s),
            )
            try:
                done = engine.generate(prompt, params)
            except EngineError as exc:
                raise PolicyError(f"local engine: {exc}") from exc
            ids, finish, first_token_at = done.ids, done.finish_reason, done.first_token_at
            self.last_cached_tokens = done.cached_tokens
        latency = time.perf_counter() - started
        text = tokenizer.decode(ids, skip_special_tokens=True)
        ttft = (first_token_at - started) if first_token_at else None
        return PolicyOutput(
            text=text,
            input_tokens=len(prompt),
            output_tokens=len(ids),
            latency_s=latency,
            ttft_s=ttft,
            decode_tokens_per_s=decode_rate(len(ids), ttft, latency),
            finish_reason=finish,
            cached_tokens=self.last_cached_tokens if engine is not None else None,
        )

    def _generate_plain(
        self,
        prompt: list[int],
        settings: GenerationSettings,
        started: float,
        timeout_s: float | None,
    ) -> tuple[list[int], str, float | None]:
        """transformers' ``generate`` (no shared prefix, no batching): the comparison path."""
        import torch

        model, tokenizer = load_model(self.model_dir)
        clock = _FirstTokenClock()
        gen: dict[str, Any] = {
            "max_new_tokens": settings.max_new_tokens,
            "streamer": clock,
            "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id,
        }
        if timeout_s is not None:
            gen["max_time"] = max(0.01, timeout_s - (time.perf_counter() - started))
        if settings.temperature > 0:
            gen.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        inputs = torch.tensor([prompt])
        with _PLAIN_LOCK, torch.inference_mode():
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
            output = model.generate(inputs, attention_mask=torch.ones_like(inputs), **gen)
        ids = output[0][len(prompt) :].tolist()
        finish = "stop" if ids and ids[-1] == tokenizer.eos_token_id else "length"
        if finish == "length" and len(ids) < settings.max_new_tokens:
            finish = "timeout"  # max_time ended it
        return ids, finish, clock.first_token_at


_PLAIN_LOCK = threading.Lock()  # one plain generate at a time (they would fight over the cores)


def stop_ids_of(model: Any, tokenizer: Any) -> tuple[int, ...]:
    """The end tokens generate stops at (kept in the output ids, as generate does)."""
    eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return ()
    return tuple(eos) if isinstance(eos, list | tuple) else (int(eos),)
