"""The deployment-replay driver: fixed cases at fixed concurrency, raw timings out.

For each concurrency level C, C worker threads pull cases from a shared queue
(closed loop: at most C requests in flight): first the warm-up cases, then, once
all warm-up requests are done, the measured ones. Each request is timed by the
replay itself from the moment it is handed to the agent to the moment the final
answer is back (wall clock, perf_counter). A request that raises, or does not
finish within the request timeout, is recorded as a failure and the run goes on;
a worker whose request timed out cancels it (if the request function has a
`cancel()`, e.g. closing its HTTP client so the server stops generating) and gets a
fresh request function, so an abandoned request never shares an agent with the next.

The request function is pluggable (`WorkerFactory`): agent_runner.py provides
the real one (the complete agent against a serving endpoint); tests use
scripted ones.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serving.metrics import DEFAULT_SLA_S


@dataclass
class RequestOutcome:
    """What the agent returned for one request, reduced to what the replay records."""

    status: str
    """'ok' (a reply or deliberate silence), 'fallback' (the Harness's conservative
    reply or suppression after the round limit, retries or the trajectory budget:
    still an executed request, answered) or 'error' (the runtime hit an error, or
    every model call failed: the request did not execute). The replay adds
    'timeout' for requests it gave up on."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Per model call: ttft_s, latency_s, input_tokens, output_tokens, error."""
    error: str | None = None
    rounds: int | None = None
    reply_route: str | None = None
    reply_chars: int | None = None
    tool_calls: int = 0
    tool_errors: int = 0


SUCCESS_STATUSES = ("ok", "fallback")
"""Statuses that count as execution success: the request came back with its final answer."""

RequestFn = Callable[[dict[str, Any]], RequestOutcome]
WorkerFactory = Callable[[], RequestFn]


@dataclass(frozen=True)
class ReplayPlan:
    """Which cases run, how many at once, and the limits of one request."""

    concurrency: tuple[int, ...] = (1, 2, 4, 8)
    warmup: int = 10
    measured: int = 100
    request_timeout_s: float = 60.0
    """A request still running after this long is recorded as status 'timeout'."""
    sla_s: float = DEFAULT_SLA_S

    def __post_init__(self):
        problems = []
        if not self.concurrency or any(c < 1 for c in self.concurrency):
            problems.append(f"concurrency {list(self.concurrency)}: give levels >= 1, e.g. 1,2,4,8")
        if self.warmup < 0:
            problems.append(f"warmup {self.warmup}: must be >= 0")
        if self.measured < 1:
            problems.append(f"measured {self.measured}: must be >= 1")
        if self.request_timeout_s <= 0:
            problems.append(f"request_timeout_s {self.request_timeout_s}: must be > 0")
        if problems:
            raise ValueError("; ".join(problems))


class _Timeout:
    pass


_TIMED_OUT = _Timeout()


def _call_with_timeout(fn: RequestFn, case: dict[str, Any], timeout_s: float) -> Any:
    """fn(case) in a daemon thread; returns its result, the exception it raised, or _TIMED_OUT."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target():
        try:
            box["result"] = fn(case)
        except BaseException as exc:  # contained: a failed request never stops the run
            box["error"] = exc
            box["trace"] = traceback.format_exc(limit=5)
        finally:
            done.set()

    threading.Thread(target=target, name="replay-request", daemon=True).start()
    if not done.wait(timeout_s):
        return _TIMED_OUT
    if "error" in box:
        return box["error"]
    return box["result"]


def _cancel(fn: RequestFn | None) -> None:
    """Ask an abandoned request to stop (e.g. close its HTTP stream so the server stops
    generating for it), if its function offers `cancel()`."""
    cancel = getattr(fn, "cancel", None)
    if cancel is not None:
        with contextlib.suppress(Exception):  # best effort: the request already counts as timed out
            cancel()


def run_level(
    *,
    concurrency: int,
    warmup_cases: list[dict[str, Any]],
    measured_cases: list[dict[str, Any]],
    worker_factory: WorkerFactory,
    request_timeout_s: float,
    on_record: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """Run one concurrency level; returns its request records (warm-up first)."""
    records: list[dict[str, Any]] = []
    lock = threading.Lock()
    level_start = time.perf_counter()

    def run_phase(phase: str, cases: list[dict[str, Any]]) -> None:
        work: queue.Queue = queue.Queue()
        for index, case in enumerate(cases):
            work.put((index, case))

        def worker(slot: int) -> None:
            fn: RequestFn | None = None
            while True:
                try:
                    index, case = work.get_nowait()
                except queue.Empty:
                    return
                record = {
                    "phase": phase,
                    "concurrency": concurrency,
                    "index": index,
                    "worker": slot,
                    "case_id": str(case.get("id", case.get("case_id", index))),
                }
                if fn is None:
                    try:
                        fn = worker_factory()
                    except Exception as exc:
                        fn = None
                        started = time.perf_counter()
                        result: Any = exc
                    else:
                        started = time.perf_counter()
                        result = _call_with_timeout(fn, case, request_timeout_s)
                else:
                    started = time.perf_counter()
                    result = _call_with_timeout(fn, case, request_timeout_s)
                ended = time.perf_counter()
                record.update(start_s=started - level_start, end_s=ended - level_start)
                if result is _TIMED_OUT:
                    _cancel(fn)
                    fn = None  # the abandoned request may still be using it
                    record.update(
                        ok=False,
                        status="timeout",
                        wall_s=None,
                        elapsed_s=ended - started,
                        has_trajectory=False,
                        calls=[],
                        error=f"no final answer within the {request_timeout_s:g} s request timeout",
                    )
                elif isinstance(result, BaseException):
                    record.update(
                        ok=False,
                        status="error",
                        wall_s=None,
                        elapsed_s=ended - started,
                        has_trajectory=False,
                        calls=[],
                        error=f"{type(result).__name__}: {result}",
                    )
                else:
                    outcome: RequestOutcome = result
                    record.update(
                        ok=outcome.status in SUCCESS_STATUSES,
                        status=outcome.status,
                        wall_s=(ended - started) if outcome.status in SUCCESS_STATUSES else None,
                        elapsed_s=ended - started,
                        has_trajectory=True,
                        calls=outcome.calls,
                        error=outcome.error,
                        rounds=outcome.rounds,
                        reply_route=outcome.reply_route,
                        reply_chars=outcome.reply_chars,
                        tool_calls=outcome.tool_calls,
                        tool_errors=outcome.tool_errors,
                    )
                with lock:
                    records.append(record)
                    if on_record is not None:
                        on_record(record)

        threads = [
            threading.Thread(target=worker, args=(slot,), name=f"replay-worker-{slot}", daemon=True)
            for slot in range(concurrency)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    if warmup_cases:
        run_phase("warmup", warmup_cases)
    run_phase("measured", measured_cases)
    return records
