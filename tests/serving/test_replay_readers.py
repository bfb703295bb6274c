"""The replay figures beyond Table 5 (TTFT P50, the latency CDF, B - A) and the bounded readers of a
run folder that a dashboard uses: a huge requests.jsonl is read up to a cap, never whole."""

import json

import numpy as np
import pytest

from serving.compare import compare_summaries
from serving.metrics import latency_cdf, summarise
from serving.record import RunRecordError, RunWriter, read_requests, read_requests_upto, read_run


def _record(wall, *, ok=True, concurrency=1, phase="measured", ttft=0.1, status=None):
    return {
        "phase": phase,
        "concurrency": concurrency,
        "ok": ok,
        "status": status or ("ok" if ok else "timeout"),
        "wall_s": wall if ok else None,
        "has_trajectory": ok,
        "calls": [
            {
                "ttft_s": ttft,
                "latency_s": ttft + 0.5,
                "input_tokens": 10,
                "output_tokens": 6,
                "error": None,
            }
        ]
        if ok
        else [],
    }


def test_ttft_p50_is_the_median_first_call_ttft():
    ttfts = [0.3, 0.1, 0.9, 0.2]
    figures = summarise([_record(1.0, ttft=t) for t in ttfts] + [_record(None, ok=False)])
    assert figures["ttft_p50_s"] == pytest.approx(float(np.percentile(ttfts, 50)))
    assert figures["ttft_p95_s"] == pytest.approx(float(np.percentile(ttfts, 95)))


def test_the_cdf_tops_out_at_the_success_rate_per_level():
    records = [
        _record(3.0),
        _record(1.0),
        _record(None, ok=False),
        _record(2.0, phase="warmup"),
        _record(5.0, concurrency=2),
    ]
    cdf = latency_cdf(records)
    assert cdf[1] == {"n": 3, "n_success": 2, "points": [[1.0, 1 / 3], [3.0, 2 / 3]]}
    assert cdf[2]["points"] == [[5.0, 1.0]]


def test_a_large_level_keeps_at_most_max_points_and_stays_close_to_the_full_curve():
    walls = [float(x) for x in np.random.default_rng(0).gamma(2.0, 1.5, size=5000)]
    records = [_record(w) for w in walls]
    full = latency_cdf(records)[1]["points"]
    kept = latency_cdf(records, max_points=100)[1]["points"]
    assert len(kept) == 100 and kept[0] == full[0] and kept[-1] == full[-1] == [max(walls), 1.0]
    assert all(a[0] <= b[0] and a[1] < b[1] for a, b in zip(kept, kept[1:], strict=False))
    # at any latency the kept curve (a step through its points) is within 1/100 of the full one
    xs, ys = [p[0] for p in kept], [p[1] for p in kept]
    for wall, share in full[::37]:
        below = np.searchsorted(xs, wall, side="right") - 1
        assert share - (ys[below] if below >= 0 else 0.0) <= 1 / 99 + 1e-9
    with pytest.raises(ValueError, match="max_points 1: must be at least 2"):
        latency_cdf(records, max_points=1)


def test_compare_gives_the_difference_beside_the_ratio():
    a = {
        "levels": {"1": {"wall_p95_s": 2.0, "ttft_p50_s": 0.5}},
        "run_id": "a",
        "case_manifest_digest": "x",
        "harness_digest": "h",
        "generation": {},
    }
    b = {**a, "run_id": "b", "levels": {"1": {"wall_p95_s": 3.0, "ttft_p50_s": None}}}
    rows = {
        r["metric"]: r
        for r in compare_summaries(a, b, metrics=["wall_p95_s", "ttft_p50_s"])["rows"]
    }
    assert (
        rows["wall_p95_s"]["difference"] == pytest.approx(1.0)
        and rows["wall_p95_s"]["ratio"] == 1.5
    )
    assert rows["ttft_p50_s"]["difference"] is None and rows["ttft_p50_s"]["lower_is_better"]


def _folder(tmp_path, n=50, *, route=True):
    writer = RunWriter(root=tmp_path, run_id="r")
    for i in range(n):
        writer.record(_record(1.0 + i / 10, concurrency=1 + i % 2))
    writer.close()
    meta = {
        "run_id": "r",
        "status": "finished",
        "harness": {"digest": "h" * 64},
        "cases": {"digest": "c" * 64},
        "generation": {"temperature": 1.0, "top_p": 0.95},
        "sla_s": 15.0,
        "levels": [],
    }
    if route:
        meta["route"] = {
            "route": "cpu-tiny",
            "engine": "transformers",
            "checkpoint": {"name": "tiny"},
        }
    writer.write_json("run.json", meta)
    return writer.dir


def test_a_capped_read_takes_whole_lines_from_the_start_only(tmp_path):
    folder = _folder(tmp_path)
    size = (folder / "requests.jsonl").stat().st_size
    everything = read_requests(folder)
    part = read_requests_upto(folder, max_bytes=size // 3)
    assert part.capped and 0 < len(part.records) < len(everything) and part.bytes_total == size
    assert part.records == everything[: len(part.records)]
    assert part.bytes_read == sum(
        len(json.dumps(r, sort_keys=True).encode()) + 1 for r in part.records
    )  # whole lines: the torn one is left out
    whole = read_requests_upto(folder, max_bytes=size)
    assert not whole.capped and whole.records == everything

    capped = read_run(folder, max_request_bytes=size // 3)
    assert capped.requests.capped
    assert sum(level["n_measured"] for level in capped.summary["levels"].values()) == len(
        part.records
    )


def test_a_line_being_written_is_left_for_the_next_read(tmp_path):
    folder = _folder(tmp_path, n=4)
    with (folder / "requests.jsonl").open("a") as handle:
        handle.write('{"phase": "measured", "concu')
    read = read_requests_upto(folder, max_bytes=1 << 20)
    assert len(read.records) == 4 and not read.capped and read.bytes_read < read.bytes_total


def test_a_broken_line_is_named_and_a_damaged_record_is_refused(tmp_path):
    folder = _folder(tmp_path, n=3)
    lines = (folder / "requests.jsonl").read_text().splitlines(keepends=True)
    (folder / "requests.jsonl").write_text(lines[0] + "{oops\n" + lines[1])
    with pytest.raises(RunRecordError, match=r"requests.jsonl:2: "):
        read_requests_upto(folder, max_bytes=1 << 20)
    (folder / "run.json").write_text("{not json")
    with pytest.raises(
        RunRecordError, match=r"run.json: not valid JSON .*the run record is damaged"
    ):
        read_run(folder)


def test_a_run_still_opening_its_route_says_so(tmp_path):
    folder = _folder(tmp_path, n=0, route=False)
    meta = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    with pytest.raises(RunRecordError, match="still opening its route; nothing is measured yet"):
        read_run(folder)
