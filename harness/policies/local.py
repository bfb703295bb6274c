"""TransformersPolicy: a local transformers causal LM on CPU (or whatever torch has).

Loads the checkpoint once per process (shared between policies that name the
same folder), renders messages with the model's chat template and generates.
Time to first token is measured with a streamer, so local numbers are
comparable with the client-observed numbers of ``OpenAIChatPolicy``.

Prefix caching: the policy keeps the KV cache of its last call. A new prompt
that starts with the same tokens (the Harness's system prompt, shared by every
request; the earlier rounds of the same request) is prefilled only from where
it differs, as SGLang's radix cache does on a GPU. On a 2-core CPU this turns a
~2,000-token prefill per model call into one of a few hundred tokens. Greedy
outputs are the same as without the cache (``tests/runtime/test_local_policy.py``).
"""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path
from typing import Any

from harness.policies.base import GenerationSettings, Policy, PolicyOutput, decode_rate


@functools.cache
def _cache_kwarg() -> str:
    """generate()'s name for a KV cache: ``cache`` from transformers 5.24, ``past_key_values`` before."""
    from transformers.generation import utils

    return "cache" if "cache" in getattr(utils, "ALL_CACHE_NAMES", ()) else "past_key_values"


# Reusing fewer tokens than this is not worth holding a cache for.
MIN_REUSED_PREFIX = 32

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

    # generation stops at ``timeout_s`` (max_time), as a streamed remote call does, instead of
    # running to max_new_tokens past the trajectory budget
    accepts_timeout = True

    def __init__(self, model_dir: str | Path, *, name: str | None = None,
                 settings: GenerationSettings | None = None, prefix_cache: bool = True) -> None:
        self.model_dir = Path(model_dir)
        self.name = name or f"local:{self.model_dir.name}"
        self.settings = settings or GenerationSettings()
        self.prefix_cache = prefix_cache
        self._lock = threading.Lock()  # one generate at a time per policy (it owns the cache)
        self._cached_ids: list[int] = []  # the tokens whose keys/values self._cache holds
        self._cache: Any = None
        self.last_cached_tokens = 0  # prompt tokens the last call did not prefill

    def _reusable_cache(self, ids: list[int]) -> tuple[Any, int]:
        """The held cache cropped to its common prefix with ``ids`` (at least one token left to prefill)."""
        if not self.prefix_cache or self._cache is None:
            return None, 0
        limit = min(len(self._cached_ids), len(ids) - 1)
        common = 0
        while common < limit and self._cached_ids[common] == ids[common]:
            common += 1
        if common < MIN_REUSED_PREFIX:
            return None, 0
        surplus = self._cache.get_seq_length() - common
        if surplus:
            self._cache.crop(-surplus)  # a negative count removes that many tokens (every transformers 5.x)
        return self._cache, common

    def generate(self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
                 settings: GenerationSettings | None = None, timeout_s: float | None = None) -> PolicyOutput:
        import torch

        settings = settings or self.settings
        model, tokenizer = load_model(self.model_dir)
        chat = [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages]
        kwargs: dict[str, Any] = {}
        if tools and "tools" in (tokenizer.chat_template or ""):
            kwargs["tools"] = tools
        started = time.perf_counter()
        inputs = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt",
                                               return_dict=True, **kwargs)
        prompt_len = int(inputs["input_ids"].shape[1])
        clock = _FirstTokenClock()
        gen: dict[str, Any] = {"max_new_tokens": settings.max_new_tokens, "streamer": clock,
                               "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id}
        if timeout_s is not None:
            gen["max_time"] = max(0.01, timeout_s - (time.perf_counter() - started))
        if settings.temperature > 0:
            gen.update(do_sample=True, temperature=settings.temperature, top_p=settings.top_p)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with self._lock, torch.inference_mode():
            if settings.seed is not None:
                torch.manual_seed(settings.seed)
            if self.prefix_cache:
                from transformers import DynamicCache

                cache, reused = self._reusable_cache(inputs["input_ids"][0].tolist())
                # held by this call only: a call that fails half-way must not leave a cache whose
                # contents no longer match self._cached_ids
                self._cache, self._cached_ids = None, []
                gen[_cache_kwarg()] = cache if cache is not None else DynamicCache(config=model.config)
                gen["return_dict_in_generate"] = True
                result = model.generate(**inputs, **gen)
                output = result.sequences
                self._cache = getattr(result, _cache_kwarg())
                # the cache holds every position but the last generated token's
                self._cached_ids = output[0][: self._cache.get_seq_length()].tolist()
                self.last_cached_tokens = reused
            else:
                output = model.generate(**inputs, **gen)
        latency = time.perf_counter() - started
        new_ids = output[0][prompt_len:]
        text = tokenizer.decode(new_ids, skip_special_tokens=True)
        n_out = int(new_ids.shape[0])
        eos = tokenizer.eos_token_id
        finish = "stop" if n_out and int(new_ids[-1]) == eos else "length"
        if finish == "length" and n_out < settings.max_new_tokens:
            finish = "timeout"  # max_time ended it
        ttft = (clock.first_token_at - started) if clock.first_token_at else None
        return PolicyOutput(text=text, input_tokens=prompt_len, output_tokens=n_out,
                            latency_s=latency, ttft_s=ttft,
                            decode_tokens_per_s=decode_rate(n_out, ttft, latency),
                            finish_reason=finish)
