"""Every example request (one per intent of docs/architecture.md §2) runs under the demo Harness
with its gold script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.livestream import Request, demo_catalogue
from harness.policies import ScriptedPolicy
from harness.runtime import Agent

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "requests"
EXPECTED_INTENTS = {
    "product_qa",
    "casual_chat",
    "clarification",
    "after_sales",
    "discount_promotion",
    "presentation_order",
    "faq_reply",
    "silent_refusal",
}


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


def test_one_agent_serves_concurrent_requests(demo_bundle):
    """Evaluation and replay share one Agent across worker threads."""
    from concurrent.futures import ThreadPoolExecutor

    requests, scripts = [], {}
    for i in range(24):
        name = example_names()[i % len(example_names())]
        data = json.loads((EXAMPLES / f"{name}.json").read_text())
        data["id"] = f"{name}-{i}"
        requests.append(data)
        scripts[data["id"]] = json.loads((EXAMPLES / "scripts" / f"{name}.json").read_text())
    with Agent(
        bundle=demo_bundle, policy=ScriptedPolicy(scripts), catalogue=demo_catalogue()
    ) as agent:
        serial = {r["id"]: agent.run(r).to_dict() for r in requests}
        with ThreadPoolExecutor(max_workers=6) as pool:
            parallel = {t.request_id: t.to_dict() for t in pool.map(agent.run, requests)}
    for rid, traj in serial.items():
        other = parallel[rid]
        assert (other["reply"], other["outcome"], other["final_room"]) == (
            traj["reply"],
            traj["outcome"],
            traj["final_room"],
        )
        assert [t["result"] for t in other["tool_calls"]] == [
            t["result"] for t in traj["tool_calls"]
        ]
