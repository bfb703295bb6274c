"""Replay metrics checked against hand-computed values from synthetic per-request timings."""

import numpy as np
import pytest

from serving.metrics import call_decode_rate, percentile, summarise, summarise_by_concurrency


def _call(ttft, latency, inp, out, error=None):
    return {
        "ttft_s": ttft,
        "latency_s": latency,
        "input_tokens": inp,
        "output_tokens": out,
        "error": error,
    }


def _ok(wall, calls, concurrency=1, phase="measured"):
    return {
        "phase": phase,
        "concurrency": concurrency,
        "ok": True,
        "status": "ok",
        "wall_s": wall,
        "has_trajectory": True,
        "calls": calls,
    }


def _failed(status, calls=(), has_trajectory=False, concurrency=1):
    return {
        "phase": "measured",
        "concurrency": concurrency,
        "ok": False,
        "status": status,
        "wall_s": None,
        "has_trajectory": has_trajectory,
        "calls": list(calls),
    }


@pytest.mark.parametrize("q", [0, 5, 50, 90, 95, 99, 100])
def test_percentile_matches_numpy_linear_interpolation(q):
    values = [3.4, 0.2, 8.1, 8.1, 5.0, 12.9, 1.1]
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_percentile_edge_cases():
    assert percentile([], 95) is None
    assert percentile([7.0], 95) == 7.0
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_summary_from_synthetic_timings():
    records = [
        _ok(2.0, [_call(0.5, 1.5, 100, 11), _call(0.2, 0.7, 150, 6)]),
        _ok(4.0, [_call(1.0, 3.0, 120, 21)]),
        _ok(16.0, [_call(2.0, 10.0, 90, 9), _call(0.4, 0.4, 200, 1)]),
        _ok(10.0, [_call(0.6, 2.6, 110, 5)]),
        _failed("timeout"),
        _failed("error", calls=[_call(0.3, 9.3, 130, 10)], has_trajectory=True),
        # warm-up requests never count
        _ok(100.0, [_call(50.0, 60.0, 1, 1)], phase="warmup"),
    ]
    s = summarise(records, sla_s=15.0)
    assert s["n_measured"] == 6
    assert s["n_success"] == 4
    # wall percentiles over the 4 successful requests: sorted 2, 4, 10, 16
    assert s["wall_p50_s"] == pytest.approx(7.0)  # (4 + 10) / 2
    assert s["wall_p95_s"] == pytest.approx(10 + 0.85 * 6)  # rank 2.85
    # attainment: 3 successful within 15 s over ALL 6 measured (timeout + error count against)
    assert s["share_within_sla"] == pytest.approx(3 / 6)
    assert s["success_rate"] == pytest.approx(4 / 6)
    assert s["failures"] == {"timeout": 1, "error": 1}
    assert s["fallback_rate"] == 0.0
    # TTFT of each request's first call: 0.5, 1.0, 2.0, 0.6, 0.3 (timeout has none)
    assert s["ttft_p95_s"] == pytest.approx(float(np.percentile([0.5, 1.0, 2.0, 0.6, 0.3], 95)))
    # decode rates: (out-1)/(latency-ttft) for calls with >= 2 tokens; the 1-token call is skipped
    rates = [10 / 1.0, 5 / 0.5, 20 / 2.0, 8 / 8.0, 4 / 2.0, 9 / 9.0]
    assert s["decode_tokens_per_s"] == pytest.approx(sum(rates) / len(rates))
    # 7 calls over the 5 requests that returned a trajectory
    assert s["n_calls"] == 7
    assert s["calls_per_request"] == pytest.approx(7 / 5)
    assert s["input_tokens_per_call"] == pytest.approx((100 + 150 + 120 + 90 + 200 + 110 + 130) / 7)
    assert s["output_tokens_per_call"] == pytest.approx((11 + 6 + 21 + 9 + 1 + 5 + 10) / 7)


def test_a_harness_fallback_reply_is_an_executed_request_and_is_counted_apart():
    fallback = _ok(12.0, [_call(0.5, 1.5, 100, 11)])
    fallback["status"] = "fallback"
    s = summarise([_ok(2.0, [_call(0.5, 1.5, 100, 11)]), fallback, _failed("timeout")])
    assert s["success_rate"] == pytest.approx(2 / 3)
    assert s["fallback_rate"] == pytest.approx(1 / 3)
    assert s["wall_p50_s"] == pytest.approx(7.0)


def test_a_level_that_mostly_fell_back_answered_nothing_and_every_table_warns():
    from serving.charts import table_markdown
    from serving.metrics import fallback_warning

    fell = []
    for wall in (3.0, 4.0, 5.0):
        record = _ok(wall, [_call(0.5, 1.5, 100, 11)])
        record["status"] = "fallback"
        fell.append(record)
    s = summarise([*fell, _ok(2.0, [_call(0.5, 1.5, 100, 11)])])
    assert (
        s["success_rate"] == 1.0 and s["share_within_sla"] == 1.0
    )  # the fallback came back in time...
    assert (
        s["answered_rate"] == pytest.approx(1 / 4) and s["mostly_fallback"] is True
    )  # ...but is no answer
    warning = fallback_warning({"1": s})
    assert warning.startswith("C=1: 3 of 4 requests fell back to the Harness's fallback reply")
    assert fallback_warning({"1": summarise([_ok(2.0, [_call(0.5, 1.5, 100, 11)])])}) == ""
    table = table_markdown(
        {
            "run_id": "r",
            "harness_digest": "h" * 12,
            "case_manifest_digest": "c" * 12,
            "generation": {"temperature": 0.0, "top_p": 1.0},
            "route": "cpu-tiny",
            "sla_s": 15.0,
            "levels": {"1": s},
        }
    )
    assert "| Success | Answered | Fallback |" in table and "| 100.0% | 25.0% | 75.0% |" in table
    assert f"**Warning:** {warning}." in table


def test_all_failed_level_reports_zero_success_not_a_crash():
    s = summarise([_failed("error"), _failed("timeout")])
    assert s["success_rate"] == 0.0
    assert s["share_within_sla"] == 0.0
    assert s["wall_p50_s"] is None and s["ttft_p95_s"] is None and s["calls_per_request"] is None


def test_failed_calls_count_as_calls_but_not_in_token_means():
    record = _ok(3.0, [_call(0.5, 1.5, 100, 11), _call(None, 10.0, 0, 0, error="APITimeoutError")])
    s = summarise([record])
    assert s["calls_per_request"] == 2
    assert s["input_tokens_per_call"] == 100 and s["output_tokens_per_call"] == 11


def test_decode_rate_ignores_unmeasurable_calls():
    assert call_decode_rate(_call(0.5, 1.5, 10, 11)) == pytest.approx(10.0)
    assert call_decode_rate(_call(0.5, 1.5, 10, 1)) is None
    assert call_decode_rate(_call(None, 1.5, 10, 5)) is None
    assert call_decode_rate(_call(0.5, 0.5, 10, 5)) is None
    assert call_decode_rate(_call(0.5, 1.5, 10, 5, error="boom")) is None


def test_levels_are_summarised_separately():
    records = [
        _ok(1.0, [_call(0.1, 0.5, 10, 5)], concurrency=1),
        _ok(3.0, [_call(0.1, 0.5, 10, 5)], concurrency=2),
        _failed("error", concurrency=2),
    ]
    by_level = summarise_by_concurrency(records)
    assert list(by_level) == [1, 2]
    assert by_level[1]["success_rate"] == 1.0
    assert by_level[2]["success_rate"] == 0.5
    assert by_level[2]["wall_p50_s"] == 3.0


def test_a_server_that_reports_no_prompt_tokens_gives_no_input_figure_not_zero():
    s = summarise([_ok(3.0, [_call(0.5, 1.5, 0, 11)])])
    assert s["input_tokens_per_call"] is None and s["output_tokens_per_call"] == 11
