"""The deployment replay end to end: real `transformers serve` (tiny model), the complete
agent, the MCP server as its own process; every reported metric recomputed here from
the raw per-request timings the run wrote."""

import json
import os
import shutil

import numpy as np
import pytest

from harness import demo_harness_dir
from serving.endpoint import GenerationSettings
from serving.profiles import resolve_route
from serving.replay import ReplayPlan
from serving.service import replay_run
from tests import artefacts

pytestmark = pytest.mark.slow

MAX_TOKENS = 12


@pytest.fixture(scope="module")
def case_file(tmp_path_factory):
    """Three cases of the evaluation world's replay set, and one malformed request between them."""
    world = tmp_path_factory.mktemp("world")
    shutil.copy(artefacts.world(tmp_path_factory, 3) / "catalogue.json", world / "catalogue.json")
    lines = (artefacts.world(tmp_path_factory, 3) / "replay.jsonl").read_text().splitlines()[:3]
    broken = json.dumps({"id": "broken-request", "request": {"comments": "not a list"}})
    path = world / "replay-small.jsonl"
    path.write_text("\n".join([lines[0], lines[1], broken, lines[2]]) + "\n")
    return path


@pytest.fixture(scope="module")
def harness_dir(tmp_path_factory):
    """The demo Harness with a 60 s trajectory budget: on a busy 2-core box even the tiny
    model's first call can take longer than 10 s, and this test is about the metrics."""
    import yaml

    from harness import load_dir

    bundle = load_dir(demo_harness_dir())
    prompt = yaml.safe_load(bundle.files["prompt.yaml"])
    prompt["constraints"]["trajectory_budget_s"] = 60
    path = tmp_path_factory.mktemp("harness") / "livestream-avatar"
    bundle.with_files({"prompt.yaml": yaml.safe_dump(prompt, sort_keys=False)}).dump_dir(path)
    return path


@pytest.fixture(scope="module")
def run_dir(case_file, harness_dir, tmp_path_factory):
    from harness.model_cache import tiny_model_dir

    tiny_model_dir()
    return replay_run(
        profile=resolve_route("cpu-tiny"),
        harness_dir=harness_dir,
        cases_path=case_file,
        plan=ReplayPlan(concurrency=(1, 2), warmup=1, measured=3, request_timeout_s=90),
        settings=GenerationSettings(temperature=1.0, top_p=0.95, max_tokens=MAX_TOKENS),
        out_root=tmp_path_factory.mktemp("runs"),
        run_id="e2e",
    )


def _load(run_dir):
    meta = json.loads((run_dir / "run.json").read_text())
    records = [json.loads(line) for line in (run_dir / "requests.jsonl").read_text().splitlines()]
    summary = json.loads((run_dir / "summary.json").read_text())
    return meta, records, summary


def test_the_run_records_what_ran(run_dir, case_file):
    meta, records, _ = _load(run_dir)
    assert meta["status"] == "finished"
    assert (
        meta["route"]["engine"] == "transformers" and meta["route"]["checkpoint"]["name"] == "tiny"
    )
    assert meta["generation"]["temperature"] == 1.0 and meta["generation"]["top_p"] == 0.95
    assert meta["timeouts"]["max_rounds"] == 4 and meta["timeouts"]["tool_timeout_s"] == 5
    assert meta["timeouts"]["trajectory_budget_s"] == 60
    assert meta["cases"]["path"] == str(case_file) and meta["cases"]["catalogue"].endswith(
        "catalogue.json"
    )
    mcp = meta["services"]["mcp_servers"]["marketing"]
    assert mcp["transport"] == "http" and mcp["url"].startswith("http://127.0.0.1:")
    # the servers were stopped with the run
    for pid in (mcp["pid"], meta["route"]["server_pid"]):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    server_log = (run_dir / "transformers-serve.log").read_text()
    assert "Uvicorn running" in server_log
    # temperature 1.0 / top-p 0.95 reached the engine: a greedy config would log top_p as ignored
    assert "not valid and may be ignored" not in server_log
    assert len(records) == 2 * 4


def test_raw_timings_are_client_observed_and_consistent(run_dir):
    _, records, _ = _load(run_dir)
    executed = [r for r in records if r["has_trajectory"]]
    assert executed, "no request reached the agent"
    for r in records:
        assert r["end_s"] >= r["start_s"]
        if r["ok"]:
            assert r["wall_s"] == pytest.approx(r["end_s"] - r["start_s"], abs=1e-6)
        for call in r["calls"]:
            assert call["error"] is None
            assert 0 < call["ttft_s"] <= call["latency_s"] <= r["elapsed_s"]
            assert call["input_tokens"] > 100  # the Harness prompt, counted by the server
            assert 1 <= call["output_tokens"] <= MAX_TOKENS
        assert sum(c["latency_s"] for c in r["calls"]) <= r["elapsed_s"] + 1e-6


def test_a_failed_request_is_a_failure_in_success_and_attainment_and_the_run_goes_on(run_dir):
    _, records, summary = _load(run_dir)
    for level in ("1", "2"):
        broken = [
            r
            for r in records
            if r["case_id"] == "broken-request" and r["concurrency"] == int(level)
        ]
        assert len(broken) == 1 and broken[0]["ok"] is False and broken[0]["status"] == "error"
        assert "not a list" in broken[0]["error"] or "comments" in broken[0]["error"]
        # the case after it still ran
        assert any(
            r["index"] == 2 and r["phase"] == "measured" and r["concurrency"] == int(level)
            for r in records
        )
        metrics = summary["levels"][level]
        assert metrics["n_measured"] == 3
        assert metrics["success_rate"] <= 2 / 3
        assert metrics["share_within_sla"] <= 2 / 3
        assert metrics["failures"].get("error", 0) >= 1


def test_every_reported_metric_matches_the_raw_timings(run_dir):
    _, records, summary = _load(run_dir)
    for level in (1, 2):
        measured = [r for r in records if r["concurrency"] == level and r["phase"] == "measured"]
        m = summary["levels"][str(level)]
        ok = [r for r in measured if r["ok"]]
        walls = [r["wall_s"] for r in ok]
        assert m["n_measured"] == len(measured) == 3
        assert m["n_success"] == len(ok)
        assert walls, "no measured request came back with a final answer"
        assert m["wall_p50_s"] == pytest.approx(float(np.percentile(walls, 50)))
        assert m["wall_p95_s"] == pytest.approx(float(np.percentile(walls, 95)))
        # the denominator of attainment and success is every measured request
        assert m["share_within_sla"] == pytest.approx(sum(w <= 15.0 for w in walls) / len(measured))
        assert m["success_rate"] == pytest.approx(len(ok) / len(measured))
        firsts = [r["calls"][0]["ttft_s"] for r in measured if r["calls"]]
        assert m["ttft_p95_s"] == pytest.approx(float(np.percentile(firsts, 95)))
        calls = [c for r in measured for c in r["calls"]]
        assert m["n_calls"] == len(calls)
        assert m["calls_per_request"] == pytest.approx(
            len(calls) / sum(r["has_trajectory"] for r in measured)
        )
        answered = [c for c in calls if not c["error"]]
        assert m["input_tokens_per_call"] == pytest.approx(
            np.mean([c["input_tokens"] for c in answered])
        )
        assert m["output_tokens_per_call"] == pytest.approx(
            np.mean([c["output_tokens"] for c in answered])
        )
        rates = [
            (c["output_tokens"] - 1) / (c["latency_s"] - c["ttft_s"])
            for c in calls
            if c["output_tokens"] >= 2 and c["latency_s"] > c["ttft_s"]
        ]
        assert m["decode_tokens_per_s"] == pytest.approx(np.mean(rates))
    table = (run_dir / "table.md").read_text()
    assert table.count("| cpu-tiny | tiny |") == 2
    assert (run_dir / "latency_cdf.png").stat().st_size > 1000
