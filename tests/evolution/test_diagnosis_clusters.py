"""Clustering failures and the two diagnosers behind one interface."""

import json

import pytest

from evaluation.diagnosis import (
    FailureCase,
    LLMDiagnoser,
    RuleBasedDiagnoser,
    cause_family,
    cluster_failures,
    diagnose,
)
from evaluation.diagnosis.edits import ChangeSkillRule, apply_edits
from evaluation.diagnosis.planted import drop_hooks, without_price_grounding
from harness import demo_harness_dir, load_mapping, read_dir
from harness.policies import role_model


def failure(
    case_id, reason, comment, reply, category="product_qa", acc=0.0, eff=0.5, skill="item_qa", **kw
):
    """A failed case whose trajectory loaded ``skill`` in round 1 (it used the Harness) unless told
    otherwise."""
    kw.setdefault("rounds", 1)
    kw.setdefault("steps", ((1, f'load_skill {{"name": "{skill}"}}'),))
    kw.setdefault("skills_loaded", (skill,))
    kw.setdefault("tools_called", ("load_skill",))
    return FailureCase(
        case_id=case_id,
        category=category,
        accuracy=acc,
        effectiveness=eff,
        reasons=(reason,),
        comment=comment,
        reply=reply,
        **kw,
    )


PRICE = [
    failure(
        f"p{i}",
        "price_without_tool",
        f"how much is the {noun}?",
        f"Link {i} is {9 + i} yuan.",
        outcome="replied",
    )
    for i, noun in enumerate(["face cream", "face cream tube", "cream jar", "night cream"])
]
REFUSED = [
    failure(
        f"r{i}",
        "refused_legit",
        f"when will my order ship {i}",
        "Sorry, I can't help with that.",
        category="aftersale",
        acc=1.0,
        eff=0.0,
        skill="refusal",
        outcome="replied",
    )
    for i in range(2)
]


@pytest.fixture(scope="module")
def demo_files():
    files, _ = read_dir(demo_harness_dir())
    return files


@pytest.fixture(scope="module")
def defect_files(demo_files):
    """The demo Harness with the price grounding removed: the rule and the hook."""
    files, _ = apply_edits(
        demo_files, [ChangeSkillRule(skill="item_qa", rule_id="fetch-before-facts", text="")]
    )
    files["hooks.yaml"] = drop_hooks(files["hooks.yaml"], ("price-needs-tool",))
    load_mapping(files)
    return files


def test_clusters_split_by_reason_and_text_and_rank_by_cost():
    unrelated = failure(
        "x1", "price_without_tool", "do you ship to hong kong", "Yes we ship there for 12 yuan."
    )
    clusters = cluster_failures(PRICE + REFUSED + [unrelated], threshold=0.1)
    assert clusters[0].reason == "price_without_tool"
    assert set(clusters[0].case_ids) == {"p0", "p1", "p2", "p3"}
    assert clusters[0].cost == pytest.approx(4 * 1.5)
    assert "cream" in clusters[0].top_terms
    assert any(c.case_ids == ["x1"] for c in clusters)
    refused = next(c for c in clusters if c.reason == "refused_legit")
    assert refused.categories == {"aftersale": 2} and len(refused.representatives) == 2


def test_a_cluster_is_named_by_what_its_viewers_asked_not_by_the_fallback_every_failure_shares():
    fallback = "Thanks for asking! Let me double-check that for you, one moment."
    damaged = [
        failure(
            f"d{i}",
            "vague_reply",
            f"my {thing} arrived damaged, what now?",
            fallback,
            category="aftersale",
            outcome="fallback",
        )
        for i, thing in enumerate(["parcel", "bottle", "box", "jar"])
    ]
    sizes = [
        failure(
            f"s{i}", "vague_reply", f"is the {thing} true to size?", fallback, outcome="fallback"
        )
        for i, thing in enumerate(["dress", "coat"])
    ]
    clusters = cluster_failures(damaged + sizes, threshold=0.1)
    named = {tuple(c.case_ids): c.top_terms for c in clusters}
    assert named[("d0", "d1", "d2", "d3")][:2] == [
        "arrived",
        "damaged",
    ]  # in every case, ties by name
    assert named[("s0", "s1")] == ["size", "true"]
    for terms in named.values():  # the fallback reply and words every failure holds name no cluster
        assert not {"thanks", "asking", "let", "double", "moment"} & set(terms)
    assert clusters[0].label() == "vague_reply (aftersale 4): arrived, damaged, now"


def test_reason_codes_map_to_families():
    assert cause_family("price_without_tool") == "ungrounded_price"
    assert cause_family("refused_legit") == "over_refusal"
    assert cause_family("invented_discount") == "ungrounded_promotion"
    assert cause_family("over_long") == "too_long"
    assert cause_family("answered_injection") == "missed_refusal"
    assert cause_family("something_new") == "unknown"


def test_rule_based_restores_the_removed_grounding(defect_files, demo_files):
    diagnosis = diagnose(
        failures=PRICE + REFUSED, total=20, files=defect_files, diagnoser=RuleBasedDiagnoser()
    )
    assert diagnosis.failed == 6 and diagnosis.diagnoser == "rule-based"
    first = diagnosis.proposals[0]
    assert first.valid and first.diagnoser == "rule-based"
    assert sorted(first.target_case_ids) == ["p0", "p1", "p2", "p3"]
    ops = {e.op for e in first.edits}
    assert ops == {"require_tool_call", "add_skill_rule"}
    assert set(first.diff) == {"hooks.yaml", "skills/item_qa/SKILL.md"}
    refusal = next(p for p in diagnosis.proposals if p.reason == "refused_legit")
    assert refusal.edits[0].op == "add_refusal_exclusion" and "aftersale" in refusal.edits[0].text
    # on the intact Harness the price hook and rule exist, so nothing is proposed for prices
    intact = diagnose(failures=PRICE, total=20, files=demo_files, diagnoser=RuleBasedDiagnoser())
    assert intact.proposals == []


def test_llm_diagnoser_over_http_validates_what_the_model_proposes(defect_files, fake_openai):
    answer = {
        "proposals": [
            {
                "title": "Ground prices",
                "rationale": "prices are guessed",
                "cluster": 0,
                "edits": [
                    {
                        "op": "require_tool_call",
                        "claim": "price",
                        "tools": ["get_product_info_by_link_id"],
                    }
                ],
            },
            {"title": "Bad op", "rationale": "", "cluster": 0, "edits": [{"op": "delete_all"}]},
            {
                "title": "Unknown rule",
                "rationale": "",
                "cluster": 1,
                "edits": [
                    {"op": "change_skill_rule", "skill": "item_qa", "rule_id": "ghost", "text": "x"}
                ],
            },
        ]
    }
    fake_openai.answers.append(json.dumps(answer))
    diagnoser = LLMDiagnoser(model=role_model("diagnoser", f"{fake_openai.url}:judge-m"))
    diagnosis = diagnose(
        failures=PRICE + REFUSED, total=20, files=defect_files, diagnoser=diagnoser
    )
    request = fake_openai.bodies[-1]
    assert request["response_format"] == {"type": "json_object"}
    assert diagnoser.model.usage()["calls"] == 1 and diagnoser.model.usage()["output_tokens"] == 2
    assert "fetch-before-facts" not in request["messages"][1]["content"]
    assert "price_without_tool" in request["messages"][1]["content"]
    good, bad_op, ghost = diagnosis.proposals
    assert good.valid and good.diagnoser == "llm:judge-m" and "hooks.yaml" in good.diff
    assert sorted(good.target_case_ids) == ["p0", "p1", "p2", "p3"]
    assert not bad_op.valid and "delete_all" in bad_op.problems[0]
    assert not ghost.valid and "has no rule {#ghost}" in ghost.problems[0]


def test_fallback_replies_loosen_the_hook_that_kept_blocking(demo_files):
    message = (
        "Your reply contains numbers that no tool returned "
        "(48, 3). Use only numbers from tool results."
    )
    cases = [
        failure(
            f"f{i}",
            "fallback_reply",
            "when does it ship?",
            "Thanks for asking! Let me double-check that",
            category="aftersale",
            acc=1.0,
            eff=0.0,
            hooks_blocked=("numbers-grounded",) * 3,
            hook_messages=(message,) * 3,
        )
        for i in range(3)
    ]
    diagnosis = diagnose(failures=cases, total=10, files=demo_files, diagnoser=RuleBasedDiagnoser())
    (proposal,) = diagnosis.proposals
    assert proposal.valid and proposal.edits[0].op == "tighten_hook"
    assert proposal.edits[0].params == {"ignore": [1, 2, 3, 24, 7, 48]}  # kept in order, 48 added
    assert cause_family("fallback_reply") == "over_blocking"


def test_vague_fallbacks_forced_by_a_hook_are_read_as_over_blocking(demo_files):
    fallback = load_mapping(demo_files).hook_set.retry.fallback_reply
    message = (
        "Your reply contains numbers that no tool returned "
        "(48). Use only numbers from tool results."
    )
    cases = [
        failure(
            f"v{i}",
            "vague",
            "my parcel arrived broken",
            fallback,
            category="aftersale",
            acc=1.0,
            eff=0.0,
            hooks_blocked=("numbers-grounded",),
            hook_messages=(message,),
        )
        for i in range(2)
    ]
    (proposal,) = diagnose(
        failures=cases, total=5, files=demo_files, diagnoser=RuleBasedDiagnoser()
    ).proposals
    assert proposal.title == "A hook blocks good replies until the fallback"
    assert 48 in proposal.edits[0].params["ignore"]


def test_fallbacks_after_the_time_budget_raise_the_budget(demo_files):
    cases = [
        failure(
            f"b{i}",
            "vague",
            "is it in stock?",
            "Thanks for asking!",
            acc=1.0,
            eff=0.0,
            outcome="fallback",
            outcome_reason="trajectory budget of 10 s used up during round 1",
            total_s=31.0,
        )
        for i in range(3)
    ]
    (proposal,) = diagnose(
        failures=cases, total=5, files=demo_files, diagnoser=RuleBasedDiagnoser()
    ).proposals
    assert proposal.title == "Requests run out of the trajectory time budget" and proposal.valid
    assert proposal.edits[0].to_dict() == {
        "op": "set_constraint",
        "name": "trajectory_budget_s",
        "value": 47,
    }
    assert proposal.summary == ["constraint trajectory_budget_s: 10 -> 47"]


def test_the_planted_defect_removes_exactly_the_price_grounding(demo_files):
    planted = load_mapping(without_price_grounding(dict(demo_files)))  # still a valid Harness
    original = load_mapping(demo_files)
    assert {h.id for h in original.hooks} - {h.id for h in planted.hooks} == {
        "price-needs-tool",
        "numbers-grounded",
    }
    assert len(planted.hooks) == len(original.hooks) - 2
    rules = {r.id for r in planted.skills["item_qa"].rules}
    assert "fetch-before-facts" in {r.id for r in original.skills["item_qa"].rules} - rules
    with pytest.raises(ValueError):
        drop_hooks(demo_files["hooks.yaml"], ("no-such-hook",))
