"""Every example request (one per intent of SPEC §2) runs under the demo Harness with its gold script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.livestream import Request, demo_catalogue
from harness.policies import ScriptedPolicy
from harness.runtime import Agent

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "requests"
EXPECTED_INTENTS = {"product_qa", "casual_chat", "clarification", "after_sales", "discount_promotion",
                    "presentation_order", "faq_reply", "silent_refusal"}


def example_names():
    return sorted(p.stem for p in EXAMPLES.glob("*.json"))


def test_there_is_an_example_for_every_intent():
    intents = {json.loads((EXAMPLES / f"{n}.json").read_text())["intent"] for n in example_names()}
    assert intents == EXPECTED_INTENTS


@pytest.fixture(scope="module")
def agent(demo_bundle):
    with Agent(bundle=demo_bundle, policy=ScriptedPolicy([]), catalogue=demo_catalogue()) as agent:
        yield agent


@pytest.mark.parametrize("name", example_names())
def test_example_runs_with_its_gold_script(agent, name):
    request = Request.load(EXAMPLES / f"{name}.json")
    agent.policy = ScriptedPolicy.load(EXAMPLES / "scripts" / f"{name}.json")
    traj = agent.run(request)
    blocked = [h.message for h in traj.hook_decisions if h.decision != "allow"]
    assert blocked == []
    assert all(t.ok for t in traj.tool_calls), [t.error for t in traj.tool_calls]
    if request.intent == "silent_refusal":
        assert (traj.outcome, traj.route) == ("silent", "silent")
    else:
        assert (traj.outcome, traj.route) == ("replied", "public")
        assert traj.reply
