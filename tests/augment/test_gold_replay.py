"""Gold trajectories replayed under variants (names remapped) pass every hook and the gate."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.augment import augment_bundle, requirements_from_case
from harness.augment.gold_replay import replay_under_variant
from harness.livestream import demo_catalogue
from harness.policies import ScriptedPolicy
from harness.runtime import Agent


def _run(bundle, policy, case):
    from evaluation.cases import case_request

    with Agent(
        bundle=bundle, policy=policy, catalogue=demo_catalogue(), connect_mcp=False
    ) as agent:
        return agent.run(case_request(case))


@pytest.fixture(scope="module")
def recorded(demo_bundle, gold_cases, gold_scripts):
    """Each scripted gold case run once under the parent Harness, as trajectory JSON."""
    out = {}
    for case in gold_cases:
        if case["id"] in gold_scripts:
            traj = _run(demo_bundle, ScriptedPolicy(gold_scripts[case["id"]]), case)
            assert all(h.decision == "allow" for h in traj.hook_decisions), case["id"]
            out[case["id"]] = (case, traj.to_dict())
    return out


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**31 - 1), which=st.integers(0, 4))
def test_gold_trajectory_replays_under_the_variant(recorded, demo_bundle, seed, which):
    case, traj = recorded[sorted(recorded)[which]]
    variant = augment_bundle(
        bundle=demo_bundle, seed=seed, requirements=requirements_from_case(case, trajectory=traj)
    )
    m = variant.mapping
    checked = replay_under_variant(trajectory=traj, variant=variant, catalogue=demo_catalogue())
    assert checked.ok, checked.problems
    replay = m.remap_trajectory(traj)
    result = _run(variant.bundle, ScriptedPolicy.from_trajectory(replay), m.remap_case(case))
    blocked = [
        (h.hook_id, h.decision, h.message) for h in result.hook_decisions if h.decision != "allow"
    ]
    assert blocked == []
    assert (result.outcome, result.route, result.reply) == (
        traj["outcome"],
        traj["route"],
        traj["reply"],
    )
    assert [c.name for c in result.tool_calls] == [m.tool(c["name"]) for c in traj["tool_calls"]]
    assert [s.skill for s in result.skill_loads] == [
        m.skill(s["skill"]) for s in traj["skill_loads"]
    ]
    assert all(s.ok for s in result.skill_loads) and all(c.ok for c in result.tool_calls)
    assert result.rounds == traj["rounds"] and result.retries == 0


def test_unremapped_replay_fails_under_a_renamed_variant(recorded, demo_bundle):
    """The remapping is what makes replay work: the parent's names are refused."""
    case, traj = recorded["price-3"]
    variant = augment_bundle(
        bundle=demo_bundle,
        seed=4,
        dims=["tools", "skills"],
        requirements=requirements_from_case(case, trajectory=traj),
    )
    result = _run(variant.bundle, ScriptedPolicy.from_trajectory(traj), case)
    assert not all(c.ok for c in result.tool_calls) or result.outcome != "replied"


def test_replay_reports_what_a_variant_broke(recorded, demo_bundle):
    """A variant whose limit is below the gold reply is caught by the replay check."""
    from harness.augment import load_envelope, parse_envelope
    from harness.augment.envelope import DEFAULT_ENVELOPE

    case, traj = recorded["price-3"]
    text = DEFAULT_ENVELOPE.read_text().replace(
        "max_length.max_chars: [160, 400]", "max_length.max_chars: [20, 30]"
    )
    tight = parse_envelope(text)
    assert load_envelope() != tight
    variant = augment_bundle(bundle=demo_bundle, seed=1, dims=["hooks"], envelope=tight)
    checked = replay_under_variant(trajectory=traj, variant=variant, catalogue=demo_catalogue())
    assert not checked.ok
    assert any(p.startswith("hook reply-length (stop) block") for p in checked.problems)
