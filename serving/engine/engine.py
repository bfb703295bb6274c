"""The local engine: one scheduler thread per loaded checkpoint, shared by every caller.

Callers (the runtime's local policy on any thread, evaluation workers, the CPU
serving route's HTTP handlers) ``submit`` token prompts and read tokens back.
The scheduler thread owns the model, every sequence's KV cache and the prefix
store, so nothing is locked on the hot path. Each turn of its loop:

1. admits waiting requests: the longest cached prefix is copied in
   (``serving.engine.prefix``), and the rest of the prompt is prefilled in
   chunks, one chunk per turn, so a long new prompt does not stall the
   requests already decoding;
2. runs one batched decode step for every request that is decoding (one matmul
   per projection for the whole batch; attention per sequence over its own
   cache), samples each request's next token with its own settings and
   generator, and finishes requests at an end token, ``max_new_tokens``, their
   deadline or cancellation.

Greedy outputs do not depend on the batch: each row's numbers are computed from
its own tokens (``tests/engine/test_engine.py`` checks batched against
one-at-a-time). Sampling uses a per-request ``torch.Generator`` seeded from the
request, so a seeded request samples the same tokens whatever else is running.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import torch

from serving.engine.model import EngineModel, SequenceKV
from serving.engine.prefix import PrefixStore
from serving.engine.sampling import SamplingParams, sample
from serving.engine.speculative import SpecStats, Speculator

PREFILL_CHUNK = 256
DEFAULT_MAX_BATCH = 8


@dataclass
class Completion:
    prompt_tokens: int
    ids: list[int]
    finish_reason: str  # stop | length | timeout | cancelled | error
    cached_tokens: int  # prompt tokens taken from the prefix store (not prefilled)
    submitted_at: float
    first_token_at: float | None
    finished_at: float
    logprobs: list[float] = field(default_factory=list)
    error: str = ""
    # speculative decoding's counts (None: the engine has no draft head)
    spec: SpecStats | None = None
    # keep_states: hidden states [n, hidden] of positions cached_tokens .. cached_tokens + n - 1
    # (the prompt after its cached prefix, then every output token but the last, which was never fed
    # back)
    states: torch.Tensor | None = None

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.submitted_at

    @property
    def latency_s(self) -> float:
        return self.finished_at - self.submitted_at


class EngineError(RuntimeError):
    """The engine failed on a request (the message says why); other requests go on."""


_DONE = object()


class Request:
    """A submitted prompt: iterate ``tokens()`` for a stream, or ``result()`` to wait."""

    _ids = itertools.count()

    def __init__(self, prompt: list[int], params: SamplingParams) -> None:
        if not prompt:
            raise ValueError("prompt: at least one token is needed")
        self.id = next(self._ids)
        self.prompt = torch.tensor(prompt, dtype=torch.long)
        self.params = params
        self.submitted_at = time.perf_counter()
        self.first_token_at: float | None = None
        self.output: list[int] = []
        self.logprobs: list[float] = []
        self.cached_tokens = 0
        self.cancelled = False
        self._stream: queue.SimpleQueue = queue.SimpleQueue()
        self._done = threading.Event()
        self._completion: Completion | None = None
        # scheduler state
        self.seq: SequenceKV | None = None
        self.pending: torch.Tensor | None = None  # prompt tokens still to prefill
        self.next_token: int | None = None
        self.generator: torch.Generator | None = None
        # policy hidden states the draft head has not consumed
        self.draft_pending: torch.Tensor | None = None
        self.spec: SpecStats | None = None
        self.states: list[torch.Tensor] = []

    def cancel(self) -> None:
        """Stop at the next step (finish_reason ``cancelled``)."""
        self.cancelled = True

    def tokens(self) -> Iterator[int]:
        """The new tokens as they are sampled; ends when the request finishes."""
        while True:
            item = self._stream.get()
            if item is _DONE:
                return
            yield item

    def next_tokens(self) -> list[int] | None:
        """Every token sampled since the last call (waits for at least one); None once finished."""
        item = self._stream.get()
        if item is _DONE:
            return None
        tokens = [item]
        while True:
            try:
                item = self._stream.get_nowait()
            except queue.Empty:
                return tokens
            if item is _DONE:
                self._stream.put(_DONE)  # seen by the next call
                return tokens
            tokens.append(item)

    def result(self, timeout: float | None = None) -> Completion:
        if not self._done.wait(timeout):
            raise TimeoutError(f"request {self.id} did not finish within {timeout} s")
        assert self._completion is not None
        if self._completion.finish_reason == "error":
            raise EngineError(self._completion.error)
        return self._completion

    # called by the scheduler thread
    def _emit(self, token: int, logprob: float | None) -> None:
        if self.first_token_at is None:
            self.first_token_at = time.perf_counter()
        self.output.append(token)
        if logprob is not None:
            self.logprobs.append(logprob)
        self._stream.put(token)

    def _finish(self, reason: str, error: str = "") -> None:
        self._completion = Completion(
            prompt_tokens=int(self.prompt.shape[0]),
            ids=list(self.output),
            finish_reason=reason,
            cached_tokens=self.cached_tokens,
            submitted_at=self.submitted_at,
            first_token_at=self.first_token_at,
            finished_at=time.perf_counter(),
            logprobs=list(self.logprobs),
            error=error,
            spec=self.spec,
            states=torch.cat(self.states) if self.states else None,
        )
        self._stream.put(_DONE)
        self._done.set()


@dataclass
class EngineStats:
    requests: int = 0
    prefill_tokens: int = 0
    cached_tokens: int = 0
    decode_steps: int = 0
    decode_tokens: int = 0
    max_batch_seen: int = 0
    spec: SpecStats = field(default_factory=SpecStats)


class Engine:
    """One checkpoint's scheduler. Build with ``engine_for``; every caller of a process shares
    it."""

    def __init__(
        self,
        model: EngineModel,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        prefix_cache_bytes: int = 1 << 30,
        prefix_cache: bool = True,
        threads: int | None = None,
        name: str = "engine",
        draft: Speculator | None = None,
    ) -> None:
        """``draft``: speculative decoding with a draft head (``serving.engine.speculative``); each
        decoding request then runs its own draft-and-verify cycle instead of the batched step."""
        self.model = model
        self.draft = draft
        self.max_batch = max(1, max_batch)
        self.prefix_cache = prefix_cache
        self.prefix = PrefixStore(max_bytes=prefix_cache_bytes)
        self.threads = threads
        self.stats = EngineStats()
        self._inbox: queue.SimpleQueue[Request | None] = queue.SimpleQueue()  # None: close
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    # -- callers ----------------------------------------------------------------------------
    def submit(self, prompt: list[int], params: SamplingParams | None = None) -> Request:
        request = Request(prompt, params or SamplingParams())
        self._inbox.put(request)
        return request

    def generate(self, prompt: list[int], params: SamplingParams | None = None) -> Completion:
        return self.submit(prompt, params).result()

    def close(self) -> None:
        """Stop the scheduler thread once the requests it holds have finished (an engine over
        weights that are about to change, such as the model an RL step trains, must not be used
        again)."""
        self._inbox.put(None)
        self._thread.join()

    # -- the scheduler thread -----------------------------------------------------------------
    def _loop(self) -> None:
        if self.threads:
            torch.set_num_threads(self.threads)
        waiting: list[Request] = []  # admitted, prefilling
        decoding: list[Request] = []
        closing = False
        with torch.inference_mode():
            while True:
                block = not waiting and not decoding
                if block and closing:
                    return
                try:
                    while True:
                        request = self._inbox.get(block=block)
                        block = False
                        if request is None:
                            closing = True
                            continue
                        waiting.append(request)
                except queue.Empty:
                    pass
                now = time.perf_counter()
                for request in [r for r in waiting + decoding if self._expired(r, now)]:
                    self._end(
                        request, "cancelled" if request.cancelled else "timeout", waiting, decoding
                    )
                if waiting and len(decoding) < self.max_batch:
                    self._prefill_step(waiting[0], waiting, decoding)
                if decoding:
                    self._decode_step(decoding, waiting)

    @staticmethod
    def _expired(request: Request, now: float) -> bool:
        deadline = request.params.deadline
        return request.cancelled or (deadline is not None and now >= deadline)

    def _start(self, request: Request) -> None:
        model = self.model
        seq, reused = self.prefix.lookup(request.prompt) if self.prefix_cache else (None, 0)
        capacity = int(request.prompt.shape[0]) + request.params.max_new_tokens + 1
        if self.draft is not None:
            request.seq = self.draft.new_sequence(model, capacity)
            request.spec = SpecStats()
            if seq is not None:
                reused = min(
                    reused, seq.draft_length
                )  # the head's slots must cover the reused prefix
        else:
            request.seq = model.new_sequence(capacity=capacity)
        if seq is not None and reused:
            request.seq.load_prefix(seq.k, seq.v, reused)
            request.seq.draft_length = reused if self.draft is not None else 0
        request.cached_tokens = reused
        request.pending = request.prompt[reused:]
        if request.params.temperature > 0:
            request.generator = torch.Generator()
            request.generator.manual_seed(
                request.params.seed
                if request.params.seed is not None
                else int.from_bytes(os.urandom(4), "little")
            )
        self.stats.requests += 1
        self.stats.cached_tokens += reused

    def _prefill_step(
        self, request: Request, waiting: list[Request], decoding: list[Request]
    ) -> None:
        try:
            if request.seq is None:
                self._start(request)
            chunk, request.pending = (
                request.pending[:PREFILL_CHUNK],
                request.pending[PREFILL_CHUNK:],
            )
            if self.draft is not None:
                logits, hidden = self.model.prefill(
                    request.seq, chunk, chunk=PREFILL_CHUNK, states=True
                )
                request.draft_pending = self.draft.absorb(
                    request.seq, request.draft_pending, hidden, request.prompt
                )
            elif request.params.keep_states:
                logits, hidden = self.model.prefill(
                    request.seq, chunk, chunk=PREFILL_CHUNK, states=True
                )
            else:
                logits = self.model.prefill(request.seq, chunk, chunk=PREFILL_CHUNK)
            if request.params.keep_states:
                request.states.append(hidden)
            self.stats.prefill_tokens += int(chunk.shape[0])
            if request.pending.shape[0]:
                return
            waiting.remove(request)
            if self.prefix_cache:
                self.prefix.insert(request.prompt, request.seq)
            decoding.append(request)
            self._take(request, logits, waiting, decoding)
        except Exception as exc:  # noqa: BLE001 - one request's failure must not stop the engine
            self._end(request, "error", waiting, decoding, error=f"{type(exc).__name__}: {exc}")

    def _decode_step(self, decoding: list[Request], waiting: list[Request]) -> None:
        if self.draft is not None:
            for request in list(decoding):
                self._speculate(request, waiting, decoding)
            return
        batch = list(decoding)
        keep = any(r.params.keep_states for r in batch)
        try:
            out = self.model.decode(
                [r.seq for r in batch], [r.next_token for r in batch], states=keep
            )
            logits, hidden = out if keep else (out, None)
            if keep:
                for row, request in enumerate(batch):
                    if request.params.keep_states:
                        request.states.append(hidden[row : row + 1])
        except Exception as exc:  # noqa: BLE001
            for request in batch:
                self._end(request, "error", waiting, decoding, error=f"{type(exc).__name__}: {exc}")
            return
        self.stats.decode_steps += 1
        self.stats.decode_tokens += len(batch)
        self.stats.max_batch_seen = max(self.stats.max_batch_seen, len(batch))
        for row, request in enumerate(batch):
            self._take(request, logits[row], waiting, decoding)

    def _speculate(self, request: Request, waiting: list[Request], decoding: list[Request]) -> None:
        """One draft-and-verify cycle of one request (``serving.engine.speculative``)."""
        tokens = torch.cat([request.prompt, torch.tensor(request.output, dtype=torch.long)])
        try:
            new, logprobs, request.draft_pending, counts = self.draft.cycle(
                self.model,
                request.seq,
                request.draft_pending,
                tokens,
                request.params,
                request.generator,
            )
        except Exception as exc:  # noqa: BLE001 - one request's failure must not stop the engine
            self._end(request, "error", waiting, decoding, error=f"{type(exc).__name__}: {exc}")
            return
        request.spec.add(counts)
        if request.params.keep_states:
            request.states.append(request.draft_pending)  # the positions this cycle kept
        self.stats.spec.add(counts)
        self.stats.decode_steps += 1
        self.stats.decode_tokens += len(new)
        self.stats.max_batch_seen = max(self.stats.max_batch_seen, 1)
        for i, token in enumerate(new):
            if not self._emit(request, token, logprobs[i] if logprobs else None, waiting, decoding):
                return

    def _take(
        self,
        request: Request,
        logits: torch.Tensor,
        waiting: list[Request],
        decoding: list[Request],
    ) -> None:
        """Sample the request's next token from ``logits`` and emit it; finish when it should."""
        token, logprob = sample(logits, request.params, request.generator)
        self._emit(request, token, logprob, waiting, decoding)

    def _emit(
        self,
        request: Request,
        token: int,
        logprob: float | None,
        waiting: list[Request],
        decoding: list[Request],
    ) -> bool:
        """Emit one token; finish the request at a stop token or its length. True while it goes
        on."""
        request._emit(token, logprob)
        params = request.params
        if token in params.stop_ids:
            self._end(request, "stop", waiting, decoding)
        elif len(request.output) >= params.max_new_tokens:
            self._end(request, "length", waiting, decoding)
        else:
            request.next_token = token
            return True
        return False

    def _end(
        self,
        request: Request,
        reason: str,
        waiting: list[Request],
        decoding: list[Request],
        error: str = "",
    ) -> None:
        for pool in (waiting, decoding):
            if request in pool:
                pool.remove(request)
        prefilled = request.pending is not None and request.pending.shape[0] == 0
        if self.prefix_cache and request.seq is not None and reason != "error" and prefilled:
            # the finished conversation: the agent's next round starts with it
            ids = torch.cat([request.prompt, torch.tensor(request.output, dtype=torch.long)])
            self.prefix.insert(ids, request.seq)
        request.seq = None
        request._finish(reason, error)


# -- one engine per checkpoint per process -------------------------------------------------------

_ENGINES: dict[tuple[str, str, str], Engine] = {}
_ENGINES_LOCK = threading.Lock()


def engine_for(
    model_dir: str | Path,
    *,
    quantization: str = "none",
    max_batch: int = DEFAULT_MAX_BATCH,
    threads: int | None = None,
    draft_head: str | Path | None = None,
    draft_steps: int | None = None,
) -> Engine:
    """The process's engine for a checkpoint (built on first use; ``UnsupportedModel`` if it cannot
    run it).

    ``draft_head``: a folder written by ``python -m training mtp``; the engine then decodes
    speculatively with it (``DraftHeadError`` if it does not fit this checkpoint)."""
    from serving.engine.draft_head import load_head
    from serving.engine.policy import load_model

    head_key = f"{Path(draft_head).resolve()}:{draft_steps or ''}" if draft_head else ""
    key = (str(Path(model_dir).resolve()), quantization, head_key)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            hf_model, _tokenizer = load_model(model_dir)
            draft = (
                Speculator(load_head(draft_head, hf_model), steps=draft_steps)
                if draft_head
                else None
            )
            engine = Engine(
                EngineModel(hf_model, quantization=quantization),
                max_batch=max_batch,
                threads=threads,
                name=f"engine:{Path(model_dir).name}:{quantization}",
                draft=draft,
            )
            _ENGINES[key] = engine
        return engine
