"""The replay driver: closed-loop concurrency, and failures that never stop a run."""

import threading
import time

import pytest

from serving.metrics import summarise
from serving.replay import ReplayPlan, RequestOutcome, run_level


def _cases(n, prefix="c"):
    return [{"id": f"{prefix}{i}", "request": {"comments": [f"hello {i}"]}} for i in range(n)]


def _ok_outcome(delay=0.0):
    time.sleep(delay)
    return RequestOutcome(
        status="ok",
        calls=[
            {
                "ttft_s": 0.01,
                "latency_s": 0.02,
                "input_tokens": 10,
                "output_tokens": 3,
                "error": None,
            }
        ],
        rounds=1,
    )


def test_at_most_c_requests_run_at_once_and_warmup_comes_first():
    in_flight = 0
    peak = 0
    lock = threading.Lock()
    order = []

    def factory():
        def run(case):
            nonlocal in_flight, peak
            with lock:
                in_flight += 1
                peak = max(peak, in_flight)
                order.append(case["id"])
            time.sleep(0.05)
            with lock:
                in_flight -= 1
            return _ok_outcome()

        return run

    records = run_level(
        concurrency=3,
        warmup_cases=_cases(3, "w"),
        measured_cases=_cases(9),
        worker_factory=factory,
        request_timeout_s=5,
    )
    assert peak == 3
    assert len(records) == 12
    assert {r["case_id"] for r in records if r["phase"] == "warmup"} == {"w0", "w1", "w2"}
    # no measured request starts before every warm-up request has finished
    assert set(order[:3]) == {"w0", "w1", "w2"}
    warm_end = max(r["end_s"] for r in records if r["phase"] == "warmup")
    assert min(r["start_s"] for r in records if r["phase"] == "measured") >= warm_end
    assert all(r["wall_s"] == pytest.approx(r["end_s"] - r["start_s"]) for r in records)


def test_errors_and_timeouts_are_failures_and_the_run_goes_on():
    made = []
    cancelled = []

    def factory():
        made.append(1)

        def run(case):
            if case["id"] == "c1":
                raise ConnectionError("server went away")
            if case["id"] == "c2":
                time.sleep(2.0)  # longer than the request timeout
            if case["id"] == "c3":
                return RequestOutcome(status="fallback", error="round limit reached")
            return _ok_outcome()

        run.cancel = lambda: cancelled.append(len(made))
        return run

    records = run_level(
        concurrency=1,
        warmup_cases=[],
        measured_cases=_cases(6),
        worker_factory=factory,
        request_timeout_s=0.3,
    )
    by_id = {r["case_id"]: r for r in records}
    assert len(records) == 6  # every case ran, including those after the failures
    assert (
        by_id["c1"]["status"] == "error"
        and "ConnectionError: server went away" in by_id["c1"]["error"]
    )
    assert by_id["c2"]["status"] == "timeout" and by_id["c2"]["elapsed_s"] < 1.0
    # a Harness fallback reply is an executed request (it answered), counted apart
    assert by_id["c3"]["status"] == "fallback" and by_id["c3"]["ok"] is True
    assert [by_id[f"c{i}"]["ok"] for i in (0, 4, 5)] == [True, True, True]
    # the timed-out request was cancelled and its worker got a fresh request function
    assert cancelled == [1]
    assert len(made) == 2
    s = summarise(records, sla_s=15.0)
    assert s["success_rate"] == pytest.approx(4 / 6)
    assert s["share_within_sla"] == pytest.approx(4 / 6)
    assert s["fallback_rate"] == pytest.approx(1 / 6)
    assert s["failures"] == {"error": 1, "timeout": 1}


def test_a_factory_that_cannot_build_the_agent_fails_requests_not_the_run():
    def factory():
        raise RuntimeError("MCP server unreachable")

    records = run_level(
        concurrency=2,
        warmup_cases=_cases(1, "w"),
        measured_cases=_cases(4),
        worker_factory=factory,
        request_timeout_s=1,
    )
    assert len(records) == 5
    assert all(r["status"] == "error" and "MCP server unreachable" in r["error"] for r in records)


def test_plan_rejects_impossible_settings():
    with pytest.raises(ValueError, match="concurrency"):
        ReplayPlan(concurrency=(0,))
    with pytest.raises(ValueError, match="measured 0"):
        ReplayPlan(measured=0)
