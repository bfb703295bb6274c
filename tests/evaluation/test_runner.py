"""Runner, report, compare and CLI: end to end with the real runtime and a scripted policy."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation.__main__ import main
from evaluation.compare import compare_runs, comparison_markdown
from evaluation.runner import RunConfigError, load_results, run_set
from harness import demo_harness_dir
from tests import artefacts

ROOT = Path(__file__).resolve().parents[2]
ITEM_QA_SCRIPT = [
    {"text": '<tool_call>{"name": "load_skill", "arguments": {"name": "chillchat"}}</tool_call>'},
    {"text": "Thanks for watching, happy to help!"},
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return artefacts.world(tmp_path_factory, 21)


def _script(tmp_path, delay=0.0):
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{**step, "delay_s": delay} for step in ITEM_QA_SCRIPT]))
    return path


def test_run_judges_every_case_writes_report_and_resumes(world, tmp_path):
    script = _script(tmp_path)
    out = tmp_path / "run"
    first = run_set(
        harness_dir=demo_harness_dir(),
        set_path=world / "dev.jsonl",
        policy=f"scripted:{script}",
        out=out,
        limit=4,
        progress=False,
    )
    assert (first.done, first.skipped) == (4, 0)
    rows = load_results(out / "results.jsonl")
    assert len(rows) == 4 and all(r["trajectory"]["skill_loads"] for r in rows)
    assert all("verdict" in r and r["verdict"]["judge"] == "programmatic" for r in rows)
    for name in ("report.json", "report.md", "category_bars.png", "run.json"):
        assert (out / name).stat().st_size > 0
    assert (out / "category_bars.png").read_bytes()[:4] == b"\x89PNG"
    second = run_set(
        harness_dir=demo_harness_dir(),
        set_path=world / "dev.jsonl",
        policy=f"scripted:{script}",
        out=out,
        limit=8,
        progress=False,
        concurrency=2,
    )
    assert (second.done, second.skipped) == (4, 4)
    rows = load_results(out / "results.jsonl")
    assert len(rows) == 8 and len({r["id"] for r in rows}) == 8
    assert all(r["reply"] == "Thanks for watching, happy to help!" for r in rows)
    with pytest.raises(RunConfigError, match="different policy"):
        run_set(
            harness_dir=demo_harness_dir(),
            set_path=world / "dev.jsonl",
            policy="scripted:other.json",
            out=out,
            progress=False,
        )


def test_tool_and_prompt_robustness_cases_get_their_tools_and_instructions(world, tmp_path):
    cases = [
        json.loads(line) for line in (world / "tool_robustness.jsonl").read_text().splitlines()
    ]
    # an unseen tool whose answer is not a price (the demo Harness's price-needs-tool hook
    # only accepts prices from its own price tools)
    case = next(
        c
        for c in cases
        if "unseen_tool" in c["tags"]
        and c["gold"]["tool_calls"][0]["name"] in ("get_shipping_eta", "get_product_rating")
    )
    tool = case["gold"]["tool_calls"][0]
    script = tmp_path / "tool.json"
    script.write_text(
        json.dumps(
            [
                '<tool_call>{"name": "load_skill", "arguments": {"name": "item_qa"}}</tool_call>',
                "<tool_call>"
                + json.dumps({"name": tool["name"], "arguments": tool["arguments"]})
                + "</tool_call>",
                "Here you go: " + case["gold"]["reference_reply"],
            ]
        )
    )
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(case) + "\n")
    (tmp_path / "catalogue.json").write_text((world / "catalogue.json").read_text())
    outcome = run_set(
        harness_dir=demo_harness_dir(),
        set_path=one,
        policy=f"scripted:{script}",
        out=tmp_path / "run",
        progress=False,
    )
    row = load_results(tmp_path / "run" / "results.jsonl")[0]
    calls = row["trajectory"]["tool_calls"]
    canned = next(t["result"] for t in case["extra_tools"] if t["name"] == tool["name"])
    assert [c["result"] for c in calls if c["name"] == tool["name"]] == [canned]
    assert row["verdict"]["rubrics"] == {"ACQ": True, "RC": True, "TC": True}
    assert outcome.summary["overall"]["rubric_avg"] == 100.0


def test_killed_run_resumes_without_rerunning_finished_cases(world, tmp_path):
    script = _script(tmp_path, delay=0.25)
    out = tmp_path / "killed"
    cmd = [
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
        "10",
        "--no-progress",
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    results = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and len(load_results(results)) < 3:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {r["id"]: r["latency_s"] for r in load_results(results)}
    assert 3 <= len(before) < 10
    assert (
        main(
            [
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
                "10",
                "--no-progress",
            ]
        )
        == 0
    )
    after = load_results(results)
    assert sorted(r["id"] for r in after) == sorted({r["id"] for r in after})
    assert len(after) == 10
    assert {r["id"]: r["latency_s"] for r in after if r["id"] in before} == before
    (out / "report.md").unlink()
    assert main(["report", str(out)]) == 0
    assert "| ALL | 10 |" in (out / "report.md").read_text()
    stale = load_results(results)
    for row in stale:
        row["verdict"] = {"accuracy": 0, "effectiveness": 0.0, "avg": 0.0, "reasons": []}
    results.write_text("".join(json.dumps(r) + "\n" for r in stale))
    assert main(["report", str(out), "--rejudge"]) == 0
    rejudged = load_results(results)
    assert [r["id"] for r in rejudged] == [r["id"] for r in after]
    assert all(
        r["verdict"]["judge"] == "programmatic" and r["verdict"]["accuracy"] == 1 for r in rejudged
    )


def _fake_run(folder: Path, scores: dict[str, tuple[str, int, float]]) -> Path:
    folder.mkdir(parents=True)
    with (folder / "results.jsonl").open("w") as handle:
        for cid, (cat, acc, eff) in scores.items():
            handle.write(
                json.dumps(
                    {
                        "id": cid,
                        "category": cat,
                        "verdict": {
                            "accuracy": acc,
                            "effectiveness": eff,
                            "avg": (acc + eff) / 2,
                            "rubric_avg": None,
                        },
                    }
                )
                + "\n"
            )
    return folder


def test_compare_finds_a_regression_planted_in_one_category(tmp_path):
    import random

    rng = random.Random(4)
    cats = ["product_qa"] * 120 + ["chitchat"] * 60 + ["promotion"] * 40 + ["aftersale"] * 30
    base, cand = {}, {}
    for i, cat in enumerate(cats):
        acc, eff = (1, 1.0) if rng.random() < 0.85 else (0, 0.5)
        base[f"c{i}"] = (cat, acc, eff)
        flip = cat == "promotion" and acc == 1 and rng.random() < 0.6  # the planted regression
        fixed = cat == "product_qa" and acc == 0 and rng.random() < 0.3  # a few unrelated fixes
        cand[f"c{i}"] = (cat, 0, 0.0) if flip else ((cat, 1, 1.0) if fixed else (cat, acc, eff))
    a, b = _fake_run(tmp_path / "a", base), _fake_run(tmp_path / "b", cand)
    result = compare_runs(run_a=a, run_b=b)
    assert result["regressed_categories"] == ["promotion"]
    promo = result["per_category"]["promotion"]
    assert (
        promo["avg"]["high"] < 0 and promo["avg"]["p_delta_le_zero"] == 1.0 and promo["regressed"]
    )
    assert result["resamples"] == 10_000
    planted = {
        cid
        for cid in base
        if base[cid][0] == "promotion" and base[cid][1] == 1 and cand[cid][1] == 0
    }
    failing = {x["case_id"] for x in result["newly_failing"]}
    assert planted <= failing
    assert result["newly_passing"] and all(
        x["category"] == "product_qa" for x in result["newly_passing"]
    )
    assert "REGRESSED" in comparison_markdown(result)
    assert main(["compare", str(a), str(b), "--resamples", "500", "--fail-on-regression"]) == 1


def test_cli_calibrate_and_ifeval(world, tmp_path, capsys):
    assert (
        main(["calibrate", "--set", str(world / "dev.jsonl"), "--out", str(tmp_path / "cal")]) == 0
    )
    report = json.loads((tmp_path / "cal" / "calibration.json").read_text())
    assert report["n"] == 482 and report["accuracy"]["agreement"] >= 0.95
    prompts = tmp_path / "ife.jsonl"
    prompts.write_text(
        "".join(
            json.dumps(
                {
                    "key": k,
                    "prompt": f"Answer {k} without commas.",
                    "instruction_id_list": ["punctuation:no_comma"],
                    "kwargs": [{}],
                }
            )
            + "\n"
            for k in (1, 2)
        )
    )
    script = tmp_path / "ife_script.json"
    script.write_text(json.dumps(["no commas at all", "one, two"]))
    capsys.readouterr()
    assert (
        main(
            [
                "ifeval",
                "--policy",
                f"scripted:{script}",
                "--source",
                str(prompts),
                "--no-progress",
                "--out",
                str(tmp_path / "ife"),
            ]
        )
        == 0
    )
    assert "IFE-P strict 50.0" in capsys.readouterr().out
    saved = json.loads((tmp_path / "ife" / "ifeval.json").read_text())
    assert saved["n_prompts"] == 2 and saved["policy"].startswith("scripted:")


def test_cli_generate_and_validate(tmp_path, capsys):
    assert main(["generate", "--out", str(tmp_path / "w"), "--seed", "2"]) == 0
    printed = capsys.readouterr().out
    assert "dev.jsonl" in printed and "482 cases" in printed and "distinct-1/2/3" in printed
    assert main(["validate", str(tmp_path / "w" / "dev.jsonl")]) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "hs-case/1", "id": "x"}\n')
    assert main(["validate", str(bad)]) == 1
    assert "bad.jsonl:1: category" in capsys.readouterr().err


def test_prompt_robustness_instructions_become_a_prompt_block(world):
    from evaluation.case_harness import INSTRUCTIONS_BLOCK, bundle_for_case
    from harness import load_dir

    base = load_dir(demo_harness_dir())
    cases = [
        json.loads(line) for line in (world / "prompt_robustness.jsonl").read_text().splitlines()
    ]
    case = next(c for c in cases if len(c["constraints"]) == 2)
    bundle = bundle_for_case(base, case)
    assert bundle.digest != base.digest
    block = next(b for b in bundle.prompt.blocks if b.id == INSTRUCTIONS_BLOCK)
    for item in case["constraints"]:
        assert item["text"].replace("{", "{{").replace("}", "}}") in block.template
    assert [b.id for b in bundle.prompt.blocks][:2] == ["persona", INSTRUCTIONS_BLOCK]
    assert bundle_for_case(base, {"id": "plain"}) is base  # no extras: the base Harness itself
