"""What the trajectory budget covers: the request from its input hooks to its outcome, every model
and tool call inside it; loading the model and putting the Harness prefix in its cache come before
it (``Policy.prepare``, ``timings["setup_s"]``), and the record says so."""

from __future__ import annotations

import json
import time

from harness.livestream import demo_catalogue
from harness.policies import ScriptedPolicy
from harness.prompt_sharing import shared_prefix
from harness.runtime import Agent, FailureInjection
from harness.runtime.agent import BUDGET_COVERS
from tests.cli import call as cli

from .helpers import call, price_request, with_constraints

LOAD_S = 0.6
PRICE = [
    call("get_product_info_by_link_id", link_id=3),
    call("load_skill", name="item_qa"),
    "Link 3 is the Sunscreen SPF50, currently 89 yuan.",
]


class SlowToLoad(ScriptedPolicy):
    """A scripted policy whose model takes ``LOAD_S`` to load, on its first call unless prepared
    first (as the llama.cpp route loads its model)."""

    def __init__(self, script):
        super().__init__(script)
        self.loaded = False
        self.prepared_with: list[str] = []

    def _load(self) -> None:
        if not self.loaded:
            time.sleep(LOAD_S)
            self.loaded = True

    def prepare(self, shared_prefix="", *, tools=None):
        self._load()
        self.prepared_with.append(shared_prefix)
        return {"load_s": LOAD_S}

    def generate(self, messages, **kwargs):
        self._load()
        return super().generate(messages, **kwargs)


def test_loading_the_model_comes_before_the_budget_and_is_recorded_as_setup(demo_bundle):
    bundle = demo_bundle
    policy = SlowToLoad(PRICE)
    with Agent(
        bundle=bundle,
        policy=policy,
        catalogue=demo_catalogue(),
        connect_mcp=False,
        trajectory_budget_s=0.5,
    ) as agent:
        traj = agent.run(price_request())
        again = agent.run(price_request(id="price-2"))
    assert traj.outcome == "replied", traj.outcome_reason
    assert traj.timings["setup_s"] >= LOAD_S > traj.timings["total_s"]
    assert traj.timings["setup"] == {"load_s": LOAD_S}
    assert again.outcome == "replied" and again.timings["setup_s"] < LOAD_S
    # the policy is told the text every request's system prompt starts with, and it is that
    prefix = shared_prefix(bundle)
    assert policy.prepared_with == [prefix, prefix] and len(prefix) > 1000
    assert traj.model_calls[0].messages[0]["content"].startswith(prefix)
    assert traj.settings["budget_covers"] == BUDGET_COVERS
    assert "setup_s" in BUDGET_COVERS and "loading the model" in BUDGET_COVERS


def test_a_tool_call_ends_when_the_budget_does(run_script, demo_bundle):
    """A tool's own timeout (5 s in the demo) is cut to the budget left: a hung tool cannot carry
    the request past it."""
    bundle = with_constraints(demo_bundle, trajectory_budget_s=1)
    injection = FailureInjection(timeout=1.0, seed=3, tools="get_product_info_by_link_id")
    traj, _ = run_script(PRICE, bundle=bundle, failure_injection=injection)
    assert traj.tool_calls[0].error_kind == "timeout"
    assert traj.outcome == "fallback" and "trajectory budget of 1 s" in traj.outcome_reason
    assert traj.timings["total_s"] < 1.5


def test_the_run_command_shows_the_budget_and_what_came_before_it(tmp_path):
    out = tmp_path / "trajectory.json"
    done = cli(
        "harness",
        "run",
        "--request",
        "examples/requests/product_price.json",
        "--policy",
        "scripted:examples/requests/scripts/product_price.json",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "of the 10 s budget" in done.stdout
    assert "before the budget" in done.stdout
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["settings"]["budget_covers"] == BUDGET_COVERS
    assert record["timings"]["setup_s"] >= 0 and record["timings"]["setup"] == {}
