"""The rule-based diagnoser turns a planted defect into a proposal that restores the score.

The defect: the demo Harness without item_qa's fetch-before-facts rule and
without the hooks that stop an ungrounded price (price-needs-tool,
numbers-grounded). The policy is the fixed shortcut script (it states a wrong
price from memory unless a hook makes it call the tool first); the real agent
runtime runs every case and the programmatic judge scores it.
"""

import pytest

from evaluation.cases import case_request
from evaluation.diagnosis import RuleBasedDiagnoser, apply_edits, diagnose, failures_from_results
from evaluation.diagnosis.edits import ChangeSkillRule
from evaluation.judges.base import ACCURACY_REASONS, EFFECTIVENESS_REASONS, TRAJECTORY_REASONS
from evaluation.judges.programmatic import ProgrammaticJudge
from evaluation.stats import category_breakdown
from harness import demo_harness_dir, load_mapping, read_dir
from harness.policies import ScriptedPolicy
from harness.runtime import Agent
from studio.evolution.scripted import case_script
from studio.traffic.testing import world_cases


def drop_hook(text: str, hook_id: str) -> str:
    lines = text.split("\n")
    start = lines.index(f"  - id: {hook_id}")
    end = start + 1
    while end < len(lines) and not lines[end].startswith("  - id:"):
        end += 1
    return "\n".join(lines[:start] + lines[end:])


@pytest.fixture(scope="module")
def world():
    cases, catalogue = world_cases(80, seed=7)
    return catalogue, cases


@pytest.fixture(scope="module")
def harnesses():
    intact, _ = read_dir(demo_harness_dir())
    defect, _ = apply_edits(
        intact, [ChangeSkillRule(skill="item_qa", rule_id="fetch-before-facts", text="")]
    )
    defect["hooks.yaml"] = drop_hook(
        drop_hook(defect["hooks.yaml"], "price-needs-tool"), "numbers-grounded"
    )
    load_mapping(defect)
    return intact, defect


def evaluate(files, cases, catalogue):
    agent = Agent(
        bundle=load_mapping(files),
        policy=ScriptedPolicy({c["id"]: case_script(c) for c in cases}),
        catalogue=catalogue,
    )
    judge = ProgrammaticJudge(catalogue=catalogue)
    rows = []
    for case in cases:
        trajectory = agent.run(case_request(case)).to_dict()
        verdict = judge.judge(
            case=case, reply=trajectory["reply"], route=trajectory["route"], trajectory=trajectory
        )
        rows.append(
            {
                "case_id": case["id"],
                "category": case["category"],
                "accuracy": verdict.accuracy,
                "effectiveness": verdict.effectiveness,
                "avg": verdict.avg,
                "reasons": [r.__dict__ for r in verdict.reasons],
                "trajectory": trajectory,
            }
        )
    return rows


def product_qa_accuracy(rows):
    return category_breakdown(rows=rows, metric="accuracy")["product_qa"].mean


def test_every_judge_reason_code_has_a_family():
    from evaluation.diagnosis import cause_family

    codes = ACCURACY_REASONS + EFFECTIVENESS_REASONS + TRAJECTORY_REASONS
    unmapped = [c for c in codes if cause_family(c) == "unknown"]
    assert unmapped == ["instruction_not_followed"]  # prompt-robustness only: no Harness template
    assert cause_family("unsupported_price") == "ungrounded_price"
    assert cause_family("spoke_when_silent") == "missed_refusal"
    assert cause_family("refused_legitimate") == "over_refusal"


def test_planted_price_defect_is_diagnosed_and_the_fix_restores_product_qa(world, harnesses):
    catalogue, cases = world
    intact, defect = harnesses
    intact_rows = evaluate(intact, cases, catalogue)
    defect_rows = evaluate(defect, cases, catalogue)
    assert product_qa_accuracy(defect_rows) < product_qa_accuracy(intact_rows) - 0.15

    by_id = {c["id"]: c for c in cases}
    failures = failures_from_results(results=defect_rows, cases=by_id)
    diagnosis = diagnose(
        failures=failures, total=len(cases), files=defect, diagnoser=RuleBasedDiagnoser()
    )
    top = diagnosis.proposals[0]
    assert top.reason == "unsupported_price" and top.valid and top.diagnoser == "rule-based"
    assert "hooks.yaml" in top.diff and "require_tool_before_claim" in top.diff["hooks.yaml"]
    assert any(
        "unsupported_price" in r
        for r in (f.reasons for f in failures if f.case_id in top.target_case_ids)
    )

    fixed, _ = apply_edits(defect, top.edits)
    fixed_rows = evaluate(fixed, cases, catalogue)
    assert product_qa_accuracy(fixed_rows) >= product_qa_accuracy(intact_rows)
    targeted = set(top.target_case_ids)
    still_failing = [
        r["case_id"] for r in fixed_rows if r["case_id"] in targeted and r["accuracy"] == 0
    ]
    assert still_failing == []
