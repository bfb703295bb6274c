"""Diagnosis that earns trust: edits backed by the trajectories, "the model, not the Harness",
replayed proposals.

Cases run through the real agent runtime and the one case scorer
(``evaluation.scoring.CaseScorer``) with scripted policies: one that never
calls a tool (an untrained model's behaviour), and the shortcut script that
states a wrong price unless a hook makes it call the tool first.
"""

import pytest

from evaluation.diagnosis import (
    MODEL_NOT_HARNESS,
    FailureCase,
    Proposal,
    RuleBasedDiagnoser,
    cluster_failures,
    diagnose,
    failures_from_results,
    prediction_text,
    replay_proposal,
    validate_proposal,
)
from evaluation.diagnosis.edits import SetConstraint
from evaluation.diagnosis.planted import without_price_grounding
from evaluation.scoring import CaseScorer, passed
from harness import demo_harness_dir, load_mapping, read_dir
from harness.policies import ScriptedPolicy
from studio.evolution.scripted import case_script
from studio.traffic.testing import world_cases

NEVER_A_TOOL = "Thanks for watching, it is a great product!"


@pytest.fixture(scope="module")
def world():
    cases, catalogue = world_cases(60, seed=7)
    return catalogue, cases


@pytest.fixture(scope="module")
def demo_files():
    files, _ = read_dir(demo_harness_dir())
    return files


def score(files, cases, catalogue, script):
    scorer = CaseScorer.for_bundle(
        bundle=load_mapping(files), policy=ScriptedPolicy(script), catalogue=catalogue
    )
    try:
        return [scorer.score(case) for case in cases]
    finally:
        scorer.close()


def scorer_factory(script, catalogue):
    return lambda bundle: CaseScorer.for_bundle(
        bundle=bundle, policy=ScriptedPolicy(script), catalogue=catalogue
    )


def test_a_model_that_never_calls_a_tool_is_the_model_not_the_harness(world, demo_files):
    catalogue, cases = world
    script = {c["id"]: [NEVER_A_TOOL] * 12 for c in cases}
    rows = score(demo_files, cases, catalogue, script)
    assert {r["outcome"] for r in rows} == {
        "fallback"
    }  # every request ran out of rounds at the reply-skill gate
    failures = failures_from_results(results=rows, cases={c["id"]: c for c in cases})
    assert len(failures) == len(cases)

    found = diagnose(
        failures=failures, total=len(rows), files=demo_files, diagnoser=RuleBasedDiagnoser()
    )
    assert found.finding.startswith(
        f"{MODEL_NOT_HARNESS}: none of the {len(cases)} failing case(s) called a "
        "tool or loaded a skill"
    )
    assert found.proposals == []  # no budget raise, no rule a skill that is never loaded would hold
    assert found.to_dict()["finding"] == found.finding


def test_more_rounds_only_for_a_model_still_doing_new_work(demo_files):
    bundle = load_mapping(demo_files)

    def stopped(case_id, steps):
        return FailureCase(
            case_id=case_id,
            category="product_qa",
            accuracy=1.0,
            effectiveness=0.0,
            reasons=("vague",),
            comment="is the cream in stock?",
            reply="Thanks for asking!",
            outcome="fallback",
            outcome_reason="round limit of 4 reached without an accepted reply",
            rounds=4,
            steps=steps,
            tools_called=tuple(s.split()[0] for _, s in steps),
        )

    same_call = tuple((r, 'search_products {"query": "cream"}') for r in range(1, 5))
    looping = [stopped(f"l{i}", same_call) for i in range(4)]
    assert RuleBasedDiagnoser().propose(clusters=cluster_failures(looping), bundle=bundle) == []

    new_work = same_call[:3] + ((4, 'get_product_info_by_link_id {"link_id": "3"}'),)
    (proposal,) = RuleBasedDiagnoser().propose(
        clusters=cluster_failures([stopped(f"w{i}", new_work) for i in range(4)]), bundle=bundle
    )
    assert [e.to_dict() for e in proposal.edits] == [
        {"op": "set_constraint", "name": "max_rounds", "value": 5}
    ]
    assert proposal.evidence == [
        "4 of 4 targeted case(s) were making a new tool call or skill load in their "
        "last round when the round limit stopped them"
    ]


def test_a_raise_that_changes_nothing_is_replayed_as_fixing_none(world, demo_files):
    """The finding of issue 15: max_rounds 4 -> 5 for a model that never calls a tool fixes 0 of its
    cases."""
    catalogue, cases = world
    script = {c["id"]: [NEVER_A_TOOL] * 12 for c in cases}
    targeted = [c["id"] for c in cases[:4]]
    proposal = validate_proposal(
        Proposal(
            title="more rounds",
            rationale="",
            reason="vague",
            target_case_ids=targeted,
            edits=[SetConstraint(name="max_rounds", value=5)],
            diagnoser="test",
        ),
        files=demo_files,
    )
    replay = replay_proposal(
        proposal,
        files=demo_files,
        cases={c["id"]: c for c in cases},
        scorer_for=scorer_factory(script, catalogue),
    )
    assert replay == {
        "targeted": 4,
        "replayed": 4,
        "fixed": 0,
        "fixed_case_ids": [],
        "errors": 0,
        "error": "",
    }
    assert prediction_text(replay) == "fixes 0 of 4 targeted cases (predicted)"


def test_the_planted_price_defect_is_found_and_its_replay_predicts_the_candidate(world, demo_files):
    catalogue, cases = world
    defect = without_price_grounding(dict(demo_files))
    script = {c["id"]: case_script(c) for c in cases}
    rows = score(defect, cases, catalogue, script)
    by_id = {c["id"]: c for c in cases}
    found = diagnose(
        failures=failures_from_results(results=rows, cases=by_id),
        total=len(rows),
        files=defect,
        diagnoser=RuleBasedDiagnoser(),
    )
    assert found.finding == ""
    price = next(p for p in found.proposals if {e.op for e in p.edits} >= {"require_tool_call"})
    assert price.valid and any("replied without calling" in why for why in price.evidence)
    assert any("loaded skill item_qa" in why for why in price.evidence)

    replay = replay_proposal(
        price, files=defect, cases=by_id, scorer_for=scorer_factory(script, catalogue)
    )
    assert price.replay is replay and replay["replayed"] == min(20, len(price.target_case_ids))
    assert replay["fixed"] > 0
    # the prediction is what the candidate run then shows on those cases (same runtime, same judge)
    from evaluation.diagnosis import apply_edits

    fixed_files, _ = apply_edits(defect, price.edits)
    replayed = price.target_case_ids[: replay["replayed"]]
    candidate = score(fixed_files, [by_id[i] for i in replayed], catalogue, script)
    assert sorted(r["id"] for r in candidate if passed(r["verdict"])) == sorted(
        replay["fixed_case_ids"]
    )
    assert prediction_text(replay).startswith(f"fixes {replay['fixed']} of ")
