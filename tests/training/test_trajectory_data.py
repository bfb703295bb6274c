"""Training data from trajectories: per-turn examples, hook-retry stripping, judge filter, HSA
replay."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from training.turns import failed_calls, turn_examples

RECORDED = Path(__file__).parent / "testdata" / "retry_trajectory.json"


@pytest.fixture(scope="module")
def recorded():
    return json.loads(RECORDED.read_text())


def test_recorded_retry_is_detected(recorded):
    traj = recorded["trajectory"]
    assert traj["retries"] == 1
    assert failed_calls(traj) == [1]  # round 2's reply was blocked by the reply-skill gate


def test_stripping_removes_failed_attempt_and_hook_message(recorded):
    traj = recorded["trajectory"]
    failed_text = traj["model_calls"][1]["text"]
    hook_message = next(h["message"] for h in traj["hook_decisions"] if h["decision"] == "block")
    stripped = turn_examples(traj, strip_retries=True)
    # three accepted turns; the blocked reply is never a completion
    assert [e["meta"]["turn"] for e in stripped] == [0, 2, 3]
    for example in stripped:
        contents = [m["content"] for m in example["prompt"]]
        assert not any(hook_message in c for c in contents)
        assert {"role": "assistant", "content": failed_text} not in example["prompt"]
    # the recovery turn now reads as a first attempt: system, user, tool call, tool result
    assert [m["role"] for m in stripped[1]["prompt"]] == ["system", "user", "assistant", "user"]
    assert stripped[1]["completion"][0]["content"].startswith('<tool_call>{"name": "load_skill"')


def test_keeping_the_retry_keeps_hook_feedback_in_context(recorded):
    traj = recorded["trajectory"]
    hook_message = next(h["message"] for h in traj["hook_decisions"] if h["decision"] == "block")
    whole = turn_examples(traj, strip_retries=False)
    assert [e["meta"]["turn"] for e in whole] == [0, 2, 3]
    recovery = whole[1]
    assert any(hook_message in m["content"] for m in recovery["prompt"])
    assert recovery["prompt"][-2] == {
        "role": "assistant",
        "content": traj["model_calls"][1]["text"],
    }


def test_prompts_are_the_runtime_messages_verbatim(recorded):
    traj = recorded["trajectory"]
    first = turn_examples(traj, strip_retries=False)[0]
    assert first["prompt"] == [
        {"role": m["role"], "content": m["content"]} for m in traj["model_calls"][0]["messages"]
    ]
    assert first["completion"][0]["content"] == traj["model_calls"][0]["text"]


def test_keep_fraction_is_respected_over_many_trajectories(recorded):
    from training.trajectory_data import examples_from_trajectory

    rng = random.Random(3)
    kinds = [
        examples_from_trajectory(recorded["trajectory"], rng=rng, keep_retry_fraction=0.1, meta={})[
            1
        ]
        for _ in range(1000)
    ]
    assert 60 <= kinds.count("kept") <= 140 and kinds.count("stripped") == 1000 - kinds.count(
        "kept"
    )


def test_gold_replay_under_variant_uses_the_variant_names():
    from harness import demo_harness_dir, load_dir
    from training.case_sources import training_cases
    from training.gold import record_gold, replay_under
    from training.hsa import build_pool

    source = training_cases("", limit=5)
    case = next(
        c for c in source.cases if c["gold"]["tool_calls"] and c["gold"]["route"] == "public"
    )
    pool = build_pool(
        bundle=load_dir(demo_harness_dir()),
        size=1,
        seed=7,
        dims=["tools", "skills"],
        cases=source.cases,
        catalogue=source.catalogue,
    )
    try:
        variant = pool.variants[0]
        gold = record_gold(pool.original.agent, case)
        replayed = replay_under(
            variant.agent, variant.remap_case(case), variant.remap_trajectory(gold)
        )
    finally:
        pool.close()
    expected_tool = variant.mapping.tool(case["gold"]["tool_calls"][0]["name"])
    assert expected_tool != case["gold"]["tool_calls"][0]["name"]  # the tool really was renamed
    assert expected_tool in [t["name"] for t in replayed["tool_calls"]]
    assert replayed["outcome"] == "replied" and replayed["teacher"] == "gold-replay"
    assert replayed["harness"]["digest"] == variant.bundle.digest
    assert (
        expected_tool in replayed["model_calls"][0]["messages"][0]["content"]
    )  # the variant's prompt


def test_rejection_judge_drops_a_wrong_stock_claim(recorded):
    from evaluation.judges import make_judge
    from training.case_sources import world_catalogue
    from training.trajectory_data import judge_trajectory

    judge = make_judge("programmatic", catalogue=world_catalogue())
    good = recorded["trajectory"]
    assert judge_trajectory(judge, recorded["case"], good).accuracy == 1
    bad = json.loads(json.dumps(good))
    bad["reply"] = "Sorry, link 59 is sold out."  # stock is 300
    assert judge_trajectory(judge, recorded["case"], bad).accuracy == 0


def test_build_examples_reports_and_separates_fixed_and_hsa():
    from training.sft_config import SFTStageConfig
    from training.stage_common import resolve_harness_dir
    from training.trajectory_data import build_sft_examples

    harness = resolve_harness_dir("demo")
    fixed, fixed_report = build_sft_examples(
        config=SFTStageConfig(max_cases=12, hsa_variants=0), harness_dir=harness
    )
    hsa, hsa_report = build_sft_examples(
        config=SFTStageConfig(max_cases=12, hsa_variants=2), harness_dir=harness
    )
    assert {e["meta"]["harness"] for e in fixed} == {"original"}
    assert len({e["meta"]["harness"] for e in hsa}) >= 3
    assert fixed_report["trajectories"] == 12 and hsa_report["trajectories"] == 36
    assert (
        hsa_report["accepted"]
        + hsa_report.get("rejected_by_judge", 0)
        + hsa_report.get("unmappable", 0)
        == 36
    )
    assert all(e["meta"]["teacher"] == "gold-replay" for e in hsa)
