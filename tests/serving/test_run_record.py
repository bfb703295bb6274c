"""The run record: what a replay writes, that its summary is its raw timings, and compare."""

import contextlib
import json
import time

import pytest

from harness import demo_harness_dir
from serving import service
from serving.__main__ import main
from serving.endpoint import Endpoint, GenerationSettings
from serving.metrics import summarise_by_concurrency
from serving.profiles import resolve_route
from serving.replay import ReplayPlan, RequestOutcome
from serving.replay_cases import CaseFileError, load_manifest


def _write_cases(path, n):
    with path.open("w") as fh:
        for i in range(n):
            fh.write(
                json.dumps(
                    {
                        "id": f"case-{i:03d}",
                        "request": {"comments": [f"How much is link {i % 3 + 1}?"]},
                    }
                )
                + "\n"
            )
    return path


@pytest.fixture
def fake_route(monkeypatch):
    """A route that needs no server: the agent is replaced by scripted outcomes."""
    profile = resolve_route("sglang:http://127.0.0.1:9/v1:fake-policy")

    @contextlib.contextmanager
    def fake_open_endpoint(*, profile, log_dir):
        yield Endpoint(
            profile=profile,
            base_url=profile.base_url,
            model=profile.model,
            checkpoint={"name": "fake-ckpt", "path": None, "fingerprint": None},
        )

    monkeypatch.setattr(service, "open_endpoint", fake_open_endpoint)
    return profile


def _scripted_factory(speed):
    def builder(*, endpoint, bundle, settings, context):
        def factory():
            def run(case):
                n = int(case["id"].split("-")[1])
                if n % 7 == 6:
                    raise TimeoutError("tool server timed out")
                time.sleep(0.01 * speed)
                calls = [
                    {
                        "ttft_s": 0.01 * speed,
                        "latency_s": 0.02 * speed + 0.001 * n,
                        "input_tokens": 100 + n,
                        "output_tokens": 5 + n % 4,
                        "error": None,
                    }
                    for _ in range(1 + n % 2)
                ]
                return RequestOutcome(
                    status="ok",
                    calls=calls,
                    rounds=len(calls),
                    reply_route="public",
                    reply_chars=40,
                )

            return run

        return factory

    return builder


def _replay(tmp_path, profile, speed, run_id, levels=(1, 2)):
    cases = _write_cases(tmp_path / "cases.jsonl", 12)
    return service.replay_run(
        profile=profile,
        harness_dir=demo_harness_dir(),
        cases_path=cases,
        plan=ReplayPlan(concurrency=levels, warmup=2, measured=10, request_timeout_s=5),
        settings=GenerationSettings(),
        out_root=tmp_path / "runs",
        run_id=run_id,
        factory_builder=_scripted_factory(speed),
    )


def test_run_folder_holds_metadata_raw_timings_summary_table_and_chart(tmp_path, fake_route):
    run_dir = _replay(tmp_path, fake_route, speed=1, run_id="run-a")
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["run_id"] == "run-a" and meta["status"] == "finished"
    assert meta["harness"]["name"] == "livestream-avatar" and len(meta["harness"]["digest"]) == 64
    assert len(meta["cases"]["digest"]) == 64 and meta["cases"]["measured_ids"][0] == "case-002"
    assert (
        meta["route"]["route"] == fake_route.name
        and meta["route"]["checkpoint"]["name"] == "fake-ckpt"
    )
    assert meta["concurrency"] == [1, 2]
    assert meta["generation"] == {
        "temperature": 1.0,
        "top_p": 0.95,
        "max_tokens": 256,
        "seed": None,
    }
    assert meta["timeouts"] == {
        "request_timeout_s": 5,
        "tool_timeout_s": 5,
        "max_rounds": 4,
        "trajectory_budget_s": 10,
    }
    assert meta["host"]["cpu_count"] >= 1 and meta["started_at"] < meta["ended_at"]
    assert [level["concurrency"] for level in meta["levels"]] == [1, 2]

    records = [json.loads(line) for line in (run_dir / "requests.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 12 and all(r["run_id"] == "run-a" for r in records)
    assert sum(r["phase"] == "measured" for r in records) == 20
    summary = json.loads((run_dir / "summary.json").read_text())
    # the reported figures are exactly the metrics of the raw timings
    expected = summarise_by_concurrency(records, sla_s=15.0)
    assert summary["levels"] == {str(c): m for c, m in expected.items()}
    # case-006 (measured) raises: one failure out of 10 measured per level
    assert summary["levels"]["1"]["success_rate"] == pytest.approx(0.9)
    assert summary["levels"]["1"]["share_within_sla"] == pytest.approx(0.9)

    table = (run_dir / "table.md").read_text()
    header = next(line for line in table.splitlines() if line.startswith("| Route"))
    assert [c.strip() for c in header.strip("|").split("|")][2:9] == [
        "C",
        "n",
        "Wall P50 (s)",
        "Wall P95 (s)",
        "TTFT P95 (s)",
        "Decode tok/s",
        "<= 15 s",
    ]
    assert table.count(f"| {fake_route.name} | fake-ckpt |") == 2
    assert "90.0%" in table
    assert (run_dir / "latency_cdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_gives_per_metric_ratios(tmp_path, fake_route, capsys):
    _replay(tmp_path, fake_route, speed=1, run_id="run-a")
    _replay(tmp_path, fake_route, speed=3, run_id="run-b")
    comparison, markdown = service.runs_compare(
        run_a="run-a", run_b="run-b", root=tmp_path / "runs"
    )
    rows = {(r["concurrency"], r["metric"]): r for r in comparison["rows"]}
    ttft = rows[(1, "ttft_p95_s")]
    assert ttft["ratio"] == pytest.approx(ttft["b"] / ttft["a"]) and ttft["ratio"] == pytest.approx(
        3.0, rel=0.05
    )
    assert rows[(1, "success_rate")]["ratio"] == pytest.approx(1.0)
    assert comparison["warnings"] == []
    assert "| 1 | TTFT P95 (s) |" in markdown
    assert main(["compare", "run-a", "run-b", "--root", str(tmp_path / "runs"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["b"] == "run-b"


def test_runs_are_listed_newest_first(tmp_path, fake_route, capsys):
    _replay(tmp_path, fake_route, speed=1, run_id="run-a", levels=(1,))
    _replay(tmp_path, fake_route, speed=1, run_id="run-b", levels=(1,))
    runs = service.runs_list(root=tmp_path / "runs")
    assert [r["run_id"] for r in runs] == ["run-b", "run-a"]
    assert runs[0]["status"] == "finished" and runs[0]["checkpoint"] == "fake-ckpt"
    assert main(["runs", "--root", str(tmp_path / "runs")]) == 0
    assert "run-b" in capsys.readouterr().out


def test_report_rebuilds_the_outputs_from_raw_timings(tmp_path, fake_route, capsys):
    run_dir = _replay(tmp_path, fake_route, speed=1, run_id="run-a", levels=(1,))
    (run_dir / "summary.json").unlink()
    (run_dir / "table.md").unlink()
    assert main(["report", str(run_dir)]) == 0
    assert "| 1 |" in capsys.readouterr().out
    assert (run_dir / "summary.json").is_file()


def test_a_short_case_file_is_refused_with_the_numbers(tmp_path):
    cases = _write_cases(tmp_path / "cases.jsonl", 5)
    with pytest.raises(
        CaseFileError, match=r"has 5 cases, but --warmup 10 \+ --measured 100 needs 110"
    ):
        load_manifest(cases, warmup=10, measured=100)


def test_case_file_errors_name_the_line(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"id": "a", "request": {}}\n{"request": {}}\n')
    with pytest.raises(CaseFileError, match=r"cases.jsonl:2: field 'id' is missing"):
        load_manifest(path, warmup=0, measured=1)
    path.write_text('{"id": "a", "request": {}}\n{"id": "a", "request": {}}\n')
    with pytest.raises(CaseFileError, match=r"cases.jsonl:2: id 'a' repeats"):
        load_manifest(path, warmup=0, measured=1)


def test_a_route_that_cannot_open_leaves_an_aborted_record_and_a_clear_error(tmp_path, capsys):
    cases = _write_cases(tmp_path / "cases.jsonl", 3)
    empty_ckpt = tmp_path / "not-a-checkpoint"
    empty_ckpt.mkdir()
    code = main(
        [
            "replay",
            "--route",
            f"transformers:{empty_ckpt}",
            "--cases",
            str(cases),
            "--warmup",
            "0",
            "--measured",
            "2",
            "--out",
            str(tmp_path / "runs"),
            "--run-id",
            "broken",
        ]
    )
    assert code == 2
    assert "no config.json" in capsys.readouterr().err
    meta = json.loads((tmp_path / "runs" / "broken" / "run.json").read_text())
    assert meta["status"] == "aborted" and "no config.json" in meta["error"]
    # the same run id again is refused instead of mixing two runs' timings
    code = main(
        [
            "replay",
            "--route",
            f"transformers:{empty_ckpt}",
            "--cases",
            str(cases),
            "--warmup",
            "0",
            "--measured",
            "2",
            "--out",
            str(tmp_path / "runs"),
            "--run-id",
            "broken",
        ]
    )
    assert code == 2 and "a run with this id exists" in capsys.readouterr().err
