"""The CPU route: a local model on llama.cpp, in process, through the prebuilt wheel ``xllamacpp``.

``llama_server_for(gguf)`` gives the process's llama.cpp server for a GGUF file
(``serving.gguf`` finds or exports it): ``slots`` sequences decoded
together in one batch, each slot keeping its last prompt's keys and values, and
a new prompt sent to the idle slot whose cached tokens it shares most with
(llama.cpp's slot choice by prompt similarity). llama.cpp's RAM prompt cache,
which can restore another conversation under concurrency (an open llama.cpp
report), stays off (``cache_ram_mib=0``); ``tests/engine/test_llama_cpp.py``
checks that 8 concurrent greedy requests each return what they return alone.
llama.cpp also opens its own HTTP listener; it is bound to a Unix socket in a
private folder behind a random API key, so nothing reaches it but this process.

``LlamaCppPolicy`` renders messages with the checkpoint's own tokenizer and
chat template and sends token ids, never text, so llama.cpp's tokenizer never
decides what the model sees. Its context only grows within a request: the
tokens of a call's prompt and output are remembered under the text they render
to, and a later call whose rendered text extends that text sends those very
tokens plus the appended text's tokens, so llama.cpp's slot cache matches the
whole earlier call (a re-tokenized reply could split differently and lose the
cache from there). Each call reports how many prompt tokens came from the cache
(``PolicyOutput.cached_tokens``). A call stops at its deadline or when
``cancel`` is set, during prefill as well as decode: the request streams
llama.cpp's prefill progress, and stopping the stream cancels the slot's task.
"""

from __future__ import annotations

import atexit
import functools
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.policies.base import GenerationSettings, Policy, PolicyError, PolicyOutput, decode_rate
from serving.gguf import GgufError, gguf_problem, header_values

#: Tokens of context each slot holds: the demo Harness's prompt (~1,700 tokens) and four rounds.
DEFAULT_SLOT_CONTEXT = 4096
DEFAULT_SLOTS = 4
#: llama.cpp's seed is an unsigned 32-bit number.
MAX_SEED = 2**32 - 1
SLOTS_ENV = "HARNESS_LLAMA_SLOTS"
THREADS_ENV = "HARNESS_LLAMA_THREADS"
FLASH_ATTN_ENV = "HARNESS_LLAMA_FLASH_ATTN"
#: Seconds ``close`` waits for a call's llama.cpp thread to reach its next event and end (one
#: prefill batch or token: under a second here, more on a loaded machine).
CLOSE_WAIT_S = 60.0

logger = logging.getLogger(__name__)


class LlamaCppError(PolicyError):
    """llama.cpp refused a request or could not load a file; the message says which and why."""


@dataclass
class Completion:
    """What one llama.cpp request produced, with its timings (``time.perf_counter`` values)."""

    prompt_tokens: int
    ids: list[int]
    logprobs: list[float]
    finish_reason: str  # stop | length | timeout | cancelled
    cached_tokens: int
    submitted_at: float
    first_token_at: float | None
    finished_at: float
    text: str = ""

    @property
    def ttft_s(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.submitted_at


@dataclass
class ServerStats:
    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    decode_tokens: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, done: Completion) -> None:
        with self.lock:
            self.requests += 1
            self.prompt_tokens += done.prompt_tokens
            self.cached_tokens += done.cached_tokens
            self.decode_tokens += len(done.ids)

    def to_dict(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "prefill_tokens": self.prompt_tokens - self.cached_tokens,
            "cached_tokens": self.cached_tokens,
            "decode_tokens": self.decode_tokens,
        }


def trained_context(gguf: Path) -> int | None:
    """The ``<arch>.context_length`` a GGUF file declares (None when it declares none)."""

    def key(found: dict) -> str:
        return f"{found.get('general.architecture')}.context_length"

    values = header_values(
        gguf,
        lambda k: k == "general.architecture" or k.endswith(".context_length"),
        lambda found: key(found) in found,
    )
    length = values.get(key(values))
    return int(length) if length is not None else None


def env_int(name: str, default: int, low: int, high: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or not low <= int(raw) <= high:
        raise ValueError(f"${name}: {raw!r} is not a whole number from {low} to {high}")
    return int(raw)


@functools.cache
def default_threads() -> int:
    """``$HARNESS_LLAMA_THREADS``, else the cores (at most 8) that are idle when the process first
    loads a model, at least one; chosen once per process. llama.cpp's threads wait for each other
    at every operation, so on a busy machine two threads on two cores are far slower than one:
    measured on the 2-core development machine at load average 8-10 (issue 51, docs/serving.md),
    the README's first call prefilled its 250 request tokens after the restored Harness prefix in
    2.9-3.7 s with one thread and did not reach a first token in 10 s with two."""
    cores = max(1, min(os.cpu_count() or 1, 8))
    try:
        idle = cores - os.getloadavg()[0]
    except OSError:  # no load average on this platform
        idle = cores
    return env_int(THREADS_ENV, max(1, min(cores, round(idle))), 1, 256)


def default_flash_attn() -> bool:
    """Flash attention, on unless ``$HARNESS_LLAMA_FLASH_ATTN`` is 0/off. Measured on 2 cores with
    the demo checkpoint (docs/serving.md): it prefills the agent's request tokens ~1.4x faster after
    the Harness prefix and decodes ~25% slower there; prefill is most of an agent request's time."""
    raw = os.environ.get(FLASH_ATTN_ENV, "").strip().lower()
    if raw in ("", "1", "on", "true", "yes"):
        return True
    if raw in ("0", "off", "false", "no"):
        return False
    raise ValueError(f"${FLASH_ATTN_ENV}: {raw!r} is not on or off (1 or 0)")


#: Prompt tokens llama.cpp prefills between two reports (``n_batch`` = ``n_ubatch``). A call stopped
#: at its deadline or cancel stops only at the next report, and until then it slows the next
#: request's prefill on the same cores: 128 tokens is under a second here, 512 were 2-4 s, and
#: prefill ran no slower with 128 (docs/serving.md).
PREFILL_BATCH = 128
#: Seconds after a call during which its slot is kept for the request's next call (tools run in
#: between).
HOLD_S = 3.0
#: A new prompt waits for a slot whose call was just stopped at its deadline (llama.cpp frees it at
#: its next prefill batch or token) when that slot shares this many more tokens with the prompt than
#: the best idle slot does: prefilling them costs seconds, the wait at most one batch.
WAIT_FOR_SHARED_TOKENS = 256
#: ... and for this long at most.
WAIT_FOR_STOPPING_S = 5.0
#: How often a waiting call (for a slot, or for llama.cpp to end it) looks at its deadline and
#: cancel.
STOP_POLL_S = 0.05


@dataclass
class PrefixHold:
    """What ``LlamaServer.hold_prefix`` did, and in how many seconds. ``source``: ``slot`` (an idle
    slot held the prefix already), ``file`` (restored from its state file), ``prefilled`` (prefilled
    now and its state saved), ``none`` (no prefix, or no idle slot: the request prefills it)."""

    tokens: int
    source: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"prefix_tokens": self.tokens, "prefix": self.source, "prefix_s": self.seconds}


class RequestOwner:
    """Marks the calls of one request (``LlamaCppPolicy.begin_request``); ``over`` once the next
    began."""

    __slots__ = ("over",)

    def __init__(self) -> None:
        self.over = False


@dataclass
class _Slot:
    # what its KV cache holds as far as we sent it; while busy, what it holds at least when freed
    tokens: list[int] = field(default_factory=list)
    used_at: float = float("-inf")
    busy: bool = False
    owner: RequestOwner | None = None  # the request whose conversation it holds (None: not told)
    # busy with a call whose deadline passed: llama.cpp frees it at its next event
    stopping: bool = False

    def held_against(self, owner: RequestOwner | None, now: float) -> bool:
        """Kept for another request's next call: used within ``HOLD_S`` by a request not known to be
        over."""
        mine = owner is not None and self.owner is owner
        over = self.owner is not None and self.owner.over
        return now - self.used_at < HOLD_S and not mine and not over


def _ended_in_time(
    ended: threading.Event, deadline: float | None, cancel: threading.Event | None
) -> bool:
    """Wait for llama.cpp to end a call: False once its deadline passes or its cancel is set
    first."""
    while True:
        wait_s = None if deadline is None else deadline - time.perf_counter()
        if cancel is not None:
            wait_s = STOP_POLL_S if wait_s is None else min(wait_s, STOP_POLL_S)
        if wait_s is not None and wait_s <= 0:
            return ended.is_set()
        if ended.wait(wait_s):
            return True
        if cancel is not None and cancel.is_set():
            return False


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class LlamaServer:
    """One GGUF file loaded in llama.cpp with ``slots`` parallel sequences. Thread-safe: each
    caller's ``complete`` blocks its own thread (llama.cpp releases the GIL) while the slots run
    together."""

    def __init__(
        self,
        gguf: str | Path,
        *,
        slots: int = DEFAULT_SLOTS,
        slot_context: int = DEFAULT_SLOT_CONTEXT,
        threads: int | None = None,
        flash_attn: bool | None = None,
        state_dir: str | Path | None = None,
    ) -> None:
        """``state_dir``: where ``hold_prefix`` keeps prefilled prefixes (default:
        ``serving.prefix_state.state_dir()``, in the model cache)."""
        import xllamacpp

        from serving import prefix_state

        self.gguf = Path(gguf)
        problem = gguf_problem(self.gguf)
        if problem:
            raise GgufError(f"llama.cpp route: {problem}")
        self.slots = slots
        try:
            trained = trained_context(self.gguf)
        except Exception as exc:  # noqa: BLE001 - the gguf reader fails in many ways on a damaged file
            raise GgufError(
                f"llama.cpp could not load {self.gguf}: its GGUF header cannot be read "
                f"({type(exc).__name__}: {exc}); export the checkpoint again"
            ) from None
        # llama.cpp caps a slot at the context the model was trained for
        self.slot_context = min(slot_context, trained or slot_context)
        self.threads = threads or default_threads()
        self.flash_attn = default_flash_attn() if flash_attn is None else flash_attn
        self.stats = ServerStats()
        self._closing = (
            threading.Event()
        )  # set by stop_calls: every call stops at llama.cpp's next event
        self._calls: set[threading.Thread] = set()  # llama.cpp threads of calls not ended yet
        self._calls_lock = threading.Lock()
        self._slots = [_Slot() for _ in range(slots)]
        self._slots_free = threading.Condition()
        self._socket_dir = tempfile.mkdtemp(
            prefix="llama-"
        )  # 0700: only this user reaches the socket
        self._socket = os.path.join(self._socket_dir, "llama.sock")
        self._api_key = secrets.token_hex(16)
        self.state_dir = Path(state_dir) if state_dir else prefix_state.state_dir()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self._model_key = prefix_state.model_key(self.gguf, flash_attn=self.flash_attn)
        self._prefix_lock = threading.Lock()
        params = xllamacpp.CommonParams()
        params.model.path = str(self.gguf)
        params.n_parallel = slots
        params.n_ctx = self.slot_context * slots
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        params.n_batch = params.n_ubatch = PREFILL_BATCH
        # the RAM prompt cache can restore another conversation (see above)
        params.cache_ram_mib = 0
        params.flash_attn_type = (
            xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if self.flash_attn
            else xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        params.hostnames = [self._socket]
        params.api_keys = [self._api_key]
        # slot save and restore (hold_prefix) read and write here; llama.cpp appends the bare name
        params.slot_save_path = str(self.state_dir) + os.sep
        params.verbosity = -1
        params.warmup = False
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # noqa: BLE001 - llama.cpp says only "failed to init"
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            raise GgufError(
                f"llama.cpp could not load {self.gguf} ({exc}); expected a GGUF file of a model "
                "llama.cpp runs (python -m serving.gguf exports a checkpoint)"
            ) from None
        _LIVE.add(self)

    def complete(
        self,
        prompt: list[int],
        *,
        max_new_tokens: int,
        temperature: float = 0.0,
        top_p: float = 1.0,
        seed: int | None = None,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
        on_tokens: Callable[[list[int], str], None] | None = None,
        owner: RequestOwner | None = None,
    ) -> Completion:
        """Generate after ``prompt`` (token ids). ``deadline`` (a ``time.perf_counter`` value) and
        ``cancel`` end the call at once with what it has, and stop it in llama.cpp at its next
        prefill batch or token (its slot counts as stopping until then: see ``_take_slot``);
        ``on_tokens(ids, text)`` streams. ``owner``: the request this call belongs to (see
        ``release``)."""
        if not prompt:
            raise LlamaCppError("prompt: at least one token is needed")
        if len(prompt) + 1 > self.slot_context:
            raise LlamaCppError(
                f"prompt: {len(prompt)} tokens do not fit the {self.slot_context}-token context "
                "of a slot"
            )
        if seed is not None and not 0 <= seed <= MAX_SEED:
            raise LlamaCppError(f"seed: expected an integer from 0 to {MAX_SEED}")
        max_new_tokens = max(1, min(max_new_tokens, self.slot_context - len(prompt)))
        body = {
            "prompt": prompt,
            "max_tokens": max_new_tokens,
            "temperature": float(temperature),
            "top_p": float(top_p),
            "top_k": 0,
            "min_p": 0.0,
            "seed": -1 if seed is None else int(seed),
            "stream": True,
            "n_probs": 1,
            "return_progress": True,
            "cache_prompt": True,
            "stream_options": {"include_usage": True},
        }
        submitted = time.perf_counter()
        ids: list[int] = []
        logprobs: list[float] = []
        texts: list[str] = []
        guard = threading.Lock()
        state: dict[str, Any] = {
            "first": None,
            "finish": None,
            "cached": 0,
            "error": None,
            "stopped": None,
        }

        def stop_now() -> bool:
            if (cancel is not None and cancel.is_set()) or self._closing.is_set():
                state["stopped"] = "cancelled"
            elif deadline is not None and time.perf_counter() >= deadline:
                state["stopped"] = "timeout"
            return state["stopped"] is not None

        def on_event(event: dict[str, Any]) -> bool:
            with guard:
                return handle(event)

        def handle(event: dict[str, Any]) -> bool:
            if "error" in event or "code" in event and "message" in event:
                error = event.get("error", event)
                state["error"] = (
                    error.get("message", str(error)) if isinstance(error, dict) else str(error)
                )
                return True
            progress = event.get("prompt_progress")
            if isinstance(progress, dict):
                state["cached"] = int(progress.get("cache") or 0)
            usage = event.get("usage")
            if usage:
                state["cached"] = int(
                    (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
                )
            for choice in event.get("choices") or []:
                content = (choice.get("logprobs") or {}).get("content") or []
                new = [int(item["id"]) for item in content]
                if new:
                    if state["first"] is None:
                        state["first"] = time.perf_counter()
                    ids.extend(new)
                    logprobs.extend(float(item.get("logprob", 0.0)) for item in content)
                    texts.append(choice.get("text") or "")
                    if on_tokens is not None:
                        on_tokens(new, choice.get("text") or "")
                if choice.get("finish_reason"):
                    state["finish"] = choice["finish_reason"]
            return stop_now()

        slot = None if stop_now() else self._take_slot(prompt, owner, stop_now)
        if slot is None:  # stopped before it began, or while every slot was busy
            finish = state["stopped"]
        else:
            body["id_slot"] = slot
            ended = threading.Event()

            def run() -> None:
                try:
                    self._server.handle_completions(body, on_event)
                except Exception as exc:  # noqa: BLE001 - reported to the caller below
                    state["error"] = f"{type(exc).__name__}: {exc}"
                finally:
                    with guard:
                        kept = (
                            prompt + ids[:-1]
                            if ids and state["error"] is None
                            else prompt[: state["cached"]]
                        )
                    self._give_slot(
                        slot, kept, owner
                    )  # only now: llama.cpp may still hold the slot until its next event
                    ended.set()
                    with self._calls_lock:
                        self._calls.discard(threading.current_thread())

            # llama.cpp reports between prefill batches and tokens only, which a loaded machine can
            # stretch to seconds: the caller gets its answer at the deadline or the cancel (the
            # engine server's client went away), and the task stops at its next event, its slot
            # marked as stopping
            thread = threading.Thread(target=run, name=f"llama-slot-{slot}", daemon=True)
            with self._calls_lock:
                self._calls.add(thread)
            thread.start()
            if not _ended_in_time(ended, deadline, cancel):
                with guard:
                    stop_now()
                    state["stopped"] = state["stopped"] or "timeout"
                self._stopping(slot)
            elif state["error"] is not None:
                raise LlamaCppError(f"llama.cpp: {state['error']}")
            finish = state["stopped"] or ("stop" if state["finish"] == "stop" else "length")
        with guard:
            done = Completion(
                prompt_tokens=len(prompt),
                ids=list(ids),
                logprobs=list(logprobs),
                finish_reason=finish,
                cached_tokens=state["cached"],
                submitted_at=submitted,
                first_token_at=state["first"],
                finished_at=time.perf_counter(),
                text="".join(texts),
            )
        self.stats.add(done)
        return done

    def _take_slot(
        self,
        prompt: list[int],
        owner: RequestOwner | None = None,
        stop_now: Callable[[], bool] | None = None,
    ) -> int | None:
        """The idle slot this prompt should run in. It waits while every slot is busy (or for a
        stopping slot, below) until ``stop_now()``, the call's deadline or cancel checked every
        ``STOP_POLL_S``, says to give up: then None, and the call ends without running.

        The slot whose cached tokens this prompt shares most with, except that a slot another
        conversation used within ``HOLD_S`` (its request may be between two calls, running a tool)
        counts the tokens it would lose against it: a new request takes a slot a finished request
        left with the same Harness prefix before it takes the slot of a request that is still going
        on. llama.cpp's own choice by similarity would hand a new request the slot of a request in
        progress, whose next call would then prefill its whole conversation again. A request that is
        over (``release``) holds nothing. A slot whose call was just stopped is waited for (at most
        ``WAIT_FOR_STOPPING_S``) when it shares ``WAIT_FOR_SHARED_TOKENS`` more tokens than any idle
        slot: after a request ends at its budget, the next one would otherwise prefill the whole
        Harness prompt into an empty slot, and end at its budget too."""
        give_up_waiting = time.perf_counter() + WAIT_FOR_STOPPING_S
        with self._slots_free:
            while True:
                now = time.perf_counter()
                best, best_score, best_shared, stopping_shared = None, None, 0, -1
                for index, slot in enumerate(self._slots):
                    shared = _common_prefix(slot.tokens, prompt)
                    if slot.busy:
                        if slot.stopping:
                            stopping_shared = max(stopping_shared, shared)
                        continue
                    score = shared - (
                        len(slot.tokens) - shared if slot.held_against(owner, now) else 0
                    )
                    if best_score is None or score > best_score:
                        best, best_score, best_shared = index, score, shared
                worth_waiting = (
                    now < give_up_waiting
                    and stopping_shared - max(0, best_score or 0) >= WAIT_FOR_SHARED_TOKENS
                )
                if best is not None and not worth_waiting:
                    slot = self._slots[best]
                    slot.busy, slot.tokens = (
                        True,
                        prompt[:best_shared],
                    )  # llama.cpp reuses this much of it
                    return best
                if stop_now is not None and stop_now():  # waited for a slot until the call's end
                    return None
                wait_s = give_up_waiting - now if worth_waiting else None
                if stop_now is not None:
                    wait_s = STOP_POLL_S if wait_s is None else min(wait_s, STOP_POLL_S)
                self._slots_free.wait(wait_s)

    def _give_slot(self, index: int, tokens: list[int], owner: RequestOwner | None = None) -> None:
        with self._slots_free:
            slot = self._slots[index]
            slot.busy, slot.stopping, slot.tokens, slot.used_at = (
                False,
                False,
                tokens,
                time.perf_counter(),
            )
            slot.owner = owner
            self._slots_free.notify_all()

    def _stopping(self, index: int) -> None:
        with self._slots_free:
            slot = self._slots[index]
            if slot.busy:
                slot.stopping = True
                self._slots_free.notify_all()

    def hold_prefix(self, tokens: list[int], owner: RequestOwner | None = None) -> PrefixHold:
        """Put ``tokens`` (a prompt prefix every request shares: a Harness's) in an idle slot before
        a request starts, so that its first call prefills only what follows them: nothing to do when
        an idle slot free for ``owner``'s request holds them, else restored from their state file,
        else prefilled and that file saved (``serving.prefix_state``). Never waits for a busy slot:
        with none idle it does nothing, and the request's own call waits and prefills as before.
        ``owner``: the request about to run (a slot it holds is free for it)."""
        from serving import prefix_state

        started = time.perf_counter()
        n = len(tokens)

        def done(source: str) -> PrefixHold:
            return PrefixHold(n, source, time.perf_counter() - started)

        if not tokens or n + 1 > self.slot_context or self._closing.is_set():
            return done("none")
        tokens = list(tokens)
        with self._prefix_lock:  # one restore or prefill at a time; the others then find it
            slot = self._slot_for_prefix(tokens, owner)
            if slot is None:
                return done("none")
            if slot < 0:
                return done("slot")
            name = prefix_state.state_name(self._model_key, tokens)
            path = self.state_dir / name
            if path.is_file():
                try:
                    prefix_state.slot_action(self._socket, self._api_key, slot, "restore", name)
                except prefix_state.SlotActionError as exc:
                    logger.warning(
                        "llama.cpp: %s could not be restored (%s); prefilling", path, exc
                    )
                    path.unlink(missing_ok=True)
                    self._give_slot(slot, [], owner)  # what it holds now is not known
                else:
                    os.utime(path)  # recently used: pruned last
                    self._give_slot(slot, tokens, owner)
                    return done("file")
            else:
                self._give_slot(slot, self._slots[slot].tokens, owner)
            filled = self.complete(tokens, max_new_tokens=1, owner=owner)
            if filled.finish_reason == "cancelled":
                return done("none")
            slot = self._slot_for_prefix(tokens, owner, holding=True)
            if slot is None:  # taken meanwhile: it holds the prefix, but it is not saved
                return done("prefilled")
            tmp = f"tmp-{os.getpid()}-{secrets.token_hex(4)}{prefix_state.SUFFIX}"
            try:
                prefix_state.slot_action(self._socket, self._api_key, slot, "save", tmp)
                prefix_state.replace_into(self.state_dir, tmp, name)
            except (prefix_state.SlotActionError, OSError) as exc:
                logger.warning("llama.cpp: the prefix state %s was not saved (%s)", path, exc)
                (self.state_dir / tmp).unlink(missing_ok=True)
            finally:
                self._give_slot(slot, tokens, owner)
            prefix_state.prune(self.state_dir)
            return done("prefilled")

    def _slot_for_prefix(
        self, tokens: list[int], owner: RequestOwner | None, *, holding: bool = False
    ) -> int | None:
        """For ``hold_prefix``: -1 when an idle slot free for ``owner`` holds ``tokens`` already;
        else the idle slot they should go in, taken (``_give_slot`` gives it back); None when every
        slot is busy. ``holding``: only an idle slot that holds exactly them (to save it), taken,
        else None."""
        n = len(tokens)
        with self._slots_free:  # re-entrant: _take_slot takes it too, and never waits here
            now = time.perf_counter()
            for slot in self._slots:
                held = slot.held_against(owner, now)
                if not holding and not slot.busy and not held and slot.tokens[:n] == tokens:
                    return -1
            if holding:
                free = [
                    i
                    for i, slot in enumerate(self._slots)
                    if not slot.busy and slot.tokens == tokens
                ]
                if not free:
                    return None
                self._slots[free[0]].busy = True
                return free[0]
            return self._take_slot(tokens, owner, stop_now=lambda: True)

    def release(self, owner: RequestOwner) -> None:
        """``owner``'s request is over: its slots keep their cache but are no longer held for its
        next call (also a slot still finishing its stopped last call), so the next request may take
        the slot that shares the most with it rather than prefill the whole prompt into an empty
        one."""
        with self._slots_free:
            owner.over = True
            self._slots_free.notify_all()

    def stop_calls(self) -> None:
        """Every running call, and every call still to come, stops at once for its caller and in
        llama.cpp at its next prefill batch or token (its finish reason: ``cancelled``)."""
        self._closing.set()
        with self._slots_free:
            self._slots_free.notify_all()  # calls waiting for a slot look at their stop at once

    def join_calls(self, timeout_s: float = CLOSE_WAIT_S) -> bool:
        """Wait for the llama.cpp threads of stopped calls to end; False if one is still running."""
        give_up = time.monotonic() + timeout_s
        while True:
            with self._calls_lock:
                running = [t for t in self._calls if t.is_alive()]
            if not running:
                return True
            for thread in running:
                thread.join(max(0.0, give_up - time.monotonic()))
            if time.monotonic() >= give_up:
                with self._calls_lock:
                    return not any(t.is_alive() for t in self._calls)

    def close(self, timeout_s: float = CLOSE_WAIT_S) -> None:
        """Stop the calls, join their threads, then unload the model: a process may exit after
        this."""
        self.stop_calls()
        if not self.join_calls(timeout_s):
            logger.warning(
                "llama.cpp: a call on %s did not end within %g s of its stop", self.gguf, timeout_s
            )
            return  # unloading the model under a running call would crash; the process keeps it
        self._server = None
        shutil.rmtree(self._socket_dir, ignore_errors=True)
        _LIVE.discard(self)


_SERVERS: dict[tuple[str, int, int, int, bool], LlamaServer] = {}
_SERVERS_LOCK = threading.Lock()
#: Every server of this process not closed yet (the shared ones and those made directly).
_LIVE: weakref.WeakSet[LlamaServer] = weakref.WeakSet()


def stop_all_calls() -> None:
    """Stop every call on every llama.cpp server of this process (a SIGTERM handler may call this:
    it only sets events); ``close_all`` then waits for them."""
    for server in list(_LIVE):
        server.stop_calls()


@atexit.register
def close_all(timeout_s: float = CLOSE_WAIT_S) -> None:
    """Stop every call of this process's llama.cpp servers and join their threads. Run at
    interpreter exit (before Python stops its threads: a thread stopped inside llama.cpp aborts the
    process), and by the Celery worker and the engine server when they shut down. The models stay
    loaded (unloading one takes seconds, and the process is ending); a later call on them ends at
    once as ``cancelled``."""
    servers = list(_LIVE)
    for server in servers:
        server.stop_calls()
    for server in servers:
        if not server.join_calls(timeout_s):
            logger.warning(
                "llama.cpp: a call on %s did not end within %g s of its stop",
                server.gguf,
                timeout_s,
            )


def llama_server_for(
    gguf: str | Path,
    *,
    slots: int | None = None,
    slot_context: int = DEFAULT_SLOT_CONTEXT,
    threads: int | None = None,
    flash_attn: bool | None = None,
) -> LlamaServer:
    """The process's llama.cpp server for a GGUF file (loaded on first use)."""
    slots = slots or env_int(SLOTS_ENV, DEFAULT_SLOTS, 1, 64)
    threads = threads or default_threads()
    flash_attn = default_flash_attn() if flash_attn is None else flash_attn
    key = (str(Path(gguf).resolve()), slots, slot_context, threads, flash_attn)
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = _SERVERS[key] = LlamaServer(
                gguf, slots=slots, slot_context=slot_context, threads=threads, flash_attn=flash_attn
            )
        return server


_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


#: The tokenizer classes a checkpoint's tokenizer_config.json names that are transformers' fast
#: tokenizer itself
FAST_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")


def load_tokenizer(model_dir: str | Path) -> Any:
    """The checkpoint's tokenizer, once per process. When its tokenizer_config.json names the fast
    tokenizer class (every checkpoint here), that class reads it directly: AutoTokenizer would load
    the model's config first to choose the same class, and with the config module, torch (2 s of an
    engine server's start that the llama.cpp route does not otherwise need)."""
    key = str(Path(model_dir).resolve())
    with _TOKENIZERS_LOCK:
        if key not in _TOKENIZERS:
            try:
                named = json.loads(
                    (Path(key) / "tokenizer_config.json").read_text(encoding="utf-8")
                )
            except (OSError, ValueError):
                named = {}
            fast = (
                isinstance(named, dict) and named.get("tokenizer_class") in FAST_TOKENIZER_CLASSES
            )
            if fast:
                from transformers import PreTrainedTokenizerFast as tokenizer_class
            else:  # AutoTokenizer's module imports torch
                from transformers import AutoTokenizer as tokenizer_class
            _TOKENIZERS[key] = tokenizer_class.from_pretrained(key)
        return _TOKENIZERS[key]


class TokenContext:
    """The tokens of recent calls, under the text they render to, so a call that extends an earlier
    one reuses its exact tokens (prompt and output) and tokenizes only what was appended."""

    def __init__(self, tokenizer: Any, *, keep: int = 256) -> None:
        self.tokenizer = tokenizer
        self.keep = keep
        self._entries: OrderedDict[str, list[int]] = OrderedDict()
        self._lock = threading.Lock()

    def tokens(self, text: str) -> tuple[list[int], int]:
        """``text``'s ids and how many of them came from an earlier call (0: tokenized whole)."""
        with self._lock:
            best = ""
            for known in self._entries:
                if len(known) > len(best) and text.startswith(known):
                    best = known
            base = list(self._entries[best]) if best else []
            if best:
                self._entries.move_to_end(best)
        rest = text[len(best) :]
        reused = len(base)
        if rest:
            base += self.tokenizer(rest, add_special_tokens=False)["input_ids"]
        return base, reused

    def remember(self, text: str, ids: list[int]) -> None:
        with self._lock:
            self._entries[text] = list(ids)
            self._entries.move_to_end(text)
            while len(self._entries) > self.keep:
                self._entries.popitem(last=False)


class LlamaCppPolicy(Policy):
    """A local checkpoint on llama.cpp. Tools are rendered into the prompt by the runtime (text
    protocol)."""

    accepts_timeout = True

    def __init__(
        self,
        model_dir: str | Path,
        *,
        gguf: str | Path | None = None,
        name: str | None = None,
        settings: GenerationSettings | None = None,
        server: LlamaServer | None = None,
        quantization: str | None = None,
    ) -> None:
        """``model_dir``: the checkpoint whose tokenizer and chat template render prompts; ``gguf``:
        the file llama.cpp runs (default: ``serving.gguf.gguf_for_checkpoint(model_dir)``)."""
        self.model_dir = Path(model_dir)
        self.name = name or f"local:{self.model_dir.name}"
        self.settings = settings or GenerationSettings()
        self._gguf = Path(gguf) if gguf else None
        self._quantization = quantization
        self._server = server
        self._context: TokenContext | None = None
        self._request = (
            threading.local()
        )  # the agent runs each request in one thread: its owner token
        self.last_cached_tokens = 0

    def begin_request(self, request_id: str) -> None:
        """A new request in this thread: the previous one's slot is no longer held for it."""
        previous = getattr(self._request, "owner", None)
        if previous is not None and self._server is not None:
            self._server.release(previous)
        self._request.owner = RequestOwner()

    def gguf_file(self) -> Path:
        """The file llama.cpp runs: the one given, else the checkpoint's export in the route's
        format (``$HARNESS_GGUF_QUANTIZATION``; exported on first use)."""
        if self._gguf is None:
            from serving.gguf import default_quantization, gguf_for_checkpoint

            self._gguf = gguf_for_checkpoint(
                self.model_dir, quantization=self._quantization or default_quantization()
            )
        return self._gguf

    def server(self) -> LlamaServer:
        if self._server is None:
            self._server = llama_server_for(self.gguf_file())
        return self._server

    @property
    def tokenizer(self) -> Any:
        return load_tokenizer(self.model_dir)

    def render_text(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> str:
        """The prompt as text: the chat template with the generation prompt."""
        tokenizer = self.tokenizer
        chat = [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages]
        kwargs: dict[str, Any] = {}
        if tools and "tools" in (tokenizer.chat_template or ""):
            kwargs["tools"] = tools
        return tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, tokenize=False, **kwargs
        )

    def prompt_ids(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> tuple[str, list[int]]:
        """The prompt's text and ids, reusing an earlier call's tokens where this prompt extends
        it."""
        if self._context is None:
            self._context = TokenContext(self.tokenizer)
        text = self.render_text(messages, tools)
        ids, _reused = self._context.tokens(text)
        return text, ids

    def prepare(
        self, shared_prefix: str = "", *, tools: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """Before a request's budget: load the model and the tokenizer (once per process), and put
        the prompt's tokens up to ``shared_prefix`` in a slot (``LlamaServer.hold_prefix``: from a
        slot, its state file, or prefilled once and saved)."""
        started = time.perf_counter()
        server = self.server()
        self.tokenizer  # noqa: B018 - loaded once
        setup: dict[str, Any] = {"load_s": time.perf_counter() - started}
        tokens = self.prefix_ids(shared_prefix, tools) if shared_prefix else []
        if tokens:
            owner = getattr(self._request, "owner", None)
            setup.update(server.hold_prefix(tokens, owner).to_dict())
        return setup

    def prefix_ids(
        self, shared_prefix: str, tools: list[dict[str, Any]] | None = None
    ) -> list[int]:
        """The ids every prompt whose system message starts with ``shared_prefix`` starts with: the
        chat template's opening and the prefix up to its last complete line (a word's end before a
        line break is a token boundary, so these ids are what the whole prompt's tokenization
        starts with), remembered so that a call's prompt reuses them."""
        mark = "\u2063PREFIX-END\u2063"
        text = self.render_text([{"role": "system", "content": shared_prefix + mark}], tools)
        if mark not in text:
            return []
        head = text[: text.index(mark)]
        head = head[: max(0, head.rfind("\n"))].rstrip()
        if not head:
            return []
        if self._context is None:
            self._context = TokenContext(self.tokenizer)
        ids, _reused = self._context.tokens(head)
        self._context.remember(head, ids)
        return ids

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        settings: GenerationSettings | None = None,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
        on_tokens: Callable[[list[int], str], None] | None = None,
        owner: RequestOwner | None = None,
    ) -> Completion:
        """One call on llama.cpp, streamed to ``on_tokens``; the engine server's entry point.
        ``owner``: the request the call belongs to (default: this thread's, from
        ``begin_request``)."""
        settings = settings or self.settings
        server = self.server()
        text, prompt = self.prompt_ids(messages, tools)
        done = server.complete(
            prompt,
            max_new_tokens=settings.max_new_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            seed=settings.seed,
            deadline=deadline,
            cancel=cancel,
            on_tokens=on_tokens,
            owner=owner or getattr(self._request, "owner", None),
        )
        output = list(done.ids)
        end = self._end_token()
        if done.finish_reason == "stop" and end is not None and (not output or output[-1] != end):
            output.append(end)  # llama.cpp does not stream the end-of-turn token it stopped at
        done.ids = output
        raw = self.tokenizer.decode(
            output, skip_special_tokens=False, clean_up_tokenization_spaces=False
        )
        self._context.remember(text + raw, prompt + output)
        done.text = self.tokenizer.decode(
            output, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        self.last_cached_tokens = done.cached_tokens
        return done

    def _end_token(self) -> int | None:
        tokenizer = self.tokenizer
        for token in ("<|im_end|>",):
            token_id = tokenizer.convert_tokens_to_ids(token)
            if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
                return token_id
        return tokenizer.eos_token_id

    def generate(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        settings: GenerationSettings | None = None,
        timeout_s: float | None = None,
    ) -> PolicyOutput:
        # a first call exports and loads the model (seconds, once): not out of this call's budget
        self.server()
        self.tokenizer  # noqa: B018 - loaded once (1-2 s): not out of the first call's budget either
        started = time.perf_counter()
        deadline = None if timeout_s is None else started + max(0.01, timeout_s)
        done = self.complete(messages, tools=tools, settings=settings, deadline=deadline)
        latency = time.perf_counter() - started
        ttft = None if done.first_token_at is None else done.first_token_at - started
        return PolicyOutput(
            text=done.text,
            input_tokens=done.prompt_tokens,
            output_tokens=len(done.ids),
            latency_s=latency,
            ttft_s=ttft,
            decode_tokens_per_s=decode_rate(len(done.ids), ttft, latency),
            finish_reason=done.finish_reason,
            cached_tokens=done.cached_tokens,
        )
