"""The one evaluation core: how requests ended, the run summary, the one paired comparison."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evaluation.scoring import OUTCOMES, outcome_and_reason, passed, request_outcome
from evaluation.summary import summarize
from harness import demo_harness_dir
from tests import artefacts

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return artefacts.world(tmp_path_factory, 21)


def _traj(outcome, reason="", calls=None):
    return {
        "outcome": outcome,
        "outcome_reason": reason,
        "reply": "",
        "route": "public",
        "model_calls": calls if calls is not None else [{"error": None}],
        "tool_calls": [],
    }


def test_requests_end_in_one_of_five_ways_and_serving_reads_the_same_classification():
    from serving.agent_runner import outcome_from_trajectory

    dead = [{"error": "APIConnectionError"}] * 2
    cases = {
        "replied": _traj("replied"),
        "silent": _traj("silent"),
        "suppressed": _traj("suppressed", "hook x"),
        "fallback": _traj("fallback", "trajectory budget of 10 s used up"),
        "error": _traj("fallback", "runtime error: KeyError: 'x'"),
    }
    assert {name: request_outcome(t) for name, t in cases.items()} == {name: name for name in cases}
    assert outcome_and_reason(_traj("fallback", "model call failed", calls=dead)) == (
        "error",
        "every model call failed: APIConnectionError",
    )
    assert request_outcome(None, error="ValueError: bad case") == "error"
    assert request_outcome({}) == "error" and set(OUTCOMES) == set(cases)
    status = {
        "replied": "ok",
        "silent": "ok",
        "fallback": "fallback",
        "suppressed": "fallback",
        "error": "error",
    }
    for name, traj in cases.items():
        assert outcome_from_trajectory({**traj, "rounds": 1}).status == status[name]


def test_one_percentile_function():
    from evaluation.stats import percentile
    from serving import metrics

    assert metrics.percentile is percentile
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5 and percentile([], 95) is None


def _row(cid, cat, acc, eff, outcome="replied", latency=1.0):
    return {
        "id": cid,
        "category": cat,
        "outcome": outcome,
        "latency_s": latency,
        "verdict": {"accuracy": acc, "effectiveness": eff, "avg": (acc + eff) / 2, "reasons": []},
    }


def test_summary_counts_how_requests_ended_and_flags_a_mostly_fallback_run():
    rows = [
        _row("a", "chitchat", 1, 1.0),
        _row("b", "chitchat", 1, 0.5),
        _row("c", "product_qa", 1, 0.0, "fallback", 3.0),
        _row("d", "product_qa", 1, 0.0, "fallback", 5.0),
        _row("e", "product_qa", 1, 0.0, "fallback", 2.0),
    ]
    summary = summarize(rows)
    assert summary["outcomes"] == {
        "n": 5,
        "replied": 2,
        "effective": 1,
        "fallback": 3,
        "suppressed": 0,
        "silent": 0,
        "error": 0,
    }
    assert summary["mostly_fallback"] is True and summary["failed"] == 4
    assert summary["overall"] == {"n": 5, "accuracy": 100.0, "effectiveness": 30.0, "avg": 65.0}
    assert summary["per_category"]["chitchat"]["effectiveness"] == 75.0
    assert summary["latency_s"]["p50"] == 2.0 and summary["latency_s"]["p95"] == pytest.approx(4.6)
    assert summarize(rows[:3])["mostly_fallback"] is False  # 1 of 3 is not most


def test_a_run_where_every_case_fell_back_says_so_beside_accuracy_100(world, tmp_path):
    script = tmp_path / "never_loads_a_skill.json"
    script.write_text(json.dumps([{"text": "Sure, happy to help!"}] * 40))
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "run",
            "--harness",
            str(demo_harness_dir()),
            "--set",
            str(world / "dev.jsonl"),
            "--policy",
            f"scripted:{script}",
            "--out",
            str(out),
            "--limit",
            "3",
            "--no-progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["outcomes"]["fallback"] == 3 and report["mostly_fallback"] is True
    assert (
        "fallback 3" in proc.stdout
        and "warning: 3 of 3 cases fell back to the Harness's fallback reply" in proc.stderr
    )
    text = (out / "report.md").read_text()
    headline = text.split("\n\n")[1]
    assert headline.startswith(
        "> **Warning: 3 of 3 cases fell back to the Harness's fallback reply"
    )
    assert "| fallback | 3 |" in text


def _results(folder: Path, scores: dict[str, tuple[int, float]]) -> Path:
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text(
        "".join(
            json.dumps(_row(cid, "product_qa", acc, eff)) + "\n"
            for cid, (acc, eff) in scores.items()
        )
    )
    return folder


def test_newly_failing_means_passed_before_and_not_now_on_the_command_line(tmp_path):
    parent = {
        "full_to_half": (1, 1.0),
        "wrong_to_worse": (0, 1.0),
        "half_to_full": (1, 0.5),
        "same": (1, 1.0),
    }
    child = {
        "full_to_half": (1, 0.5),
        "wrong_to_worse": (0, 0.0),
        "half_to_full": (1, 1.0),
        "same": (1, 1.0),
    }
    a, b = _results(tmp_path / "a", parent), _results(tmp_path / "b", child)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evaluation",
            "compare",
            str(a),
            str(b),
            "--resamples",
            "200",
            "--out",
            str(tmp_path / "cmp.md"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "cmp.json").read_text())
    # Accuracy stays 1 but the reply is only half effective: it no longer passes
    assert [x["case_id"] for x in result["newly_failing"]] == ["full_to_half"]
    # a wrong reply that gets worse was failing already: not newly failing
    assert [x["case_id"] for x in result["newly_passing"]] == ["half_to_full"]
    assert result["overall"]["errors_parent"] == 2 and result["overall"]["errors_candidate"] == 2
    assert (
        "## Newly failing cases (1)" in proc.stdout
        and "- full_to_half (product_qa): AVG 1.0 -> 0.75" in proc.stdout
    )
    assert passed({"accuracy": 1, "effectiveness": 1.0}) and not passed(
        {"accuracy": 1, "effectiveness": 0.5}
    )
