"""The Policy base class: its optional members are declared with no-op defaults, and the agent
calls them directly; the on_step observer sees each step while the request runs."""

from __future__ import annotations

import pytest

from harness.livestream import demo_catalogue
from harness.policies import Policy, PolicyError, PolicyOutput, ScriptedPolicy
from harness.policies.openai_chat import OpenAIChatPolicy
from harness.runtime import Agent
from serving.engine.policy import TransformersPolicy
from training.sampling_policy import SamplingPolicy

from .helpers import call, price_request

GOOD = [
    call("get_product_info_by_link_id", link_id=3),
    call("load_skill", name="item_qa"),
    "Link 3 is the Sunscreen SPF50 at 89 yuan.",
]


class Minimal(Policy):
    """Only generate: every optional member comes from the base class."""

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.kwargs = []

    def generate(self, messages, *, tools=None, settings=None):
        self.kwargs.append({"tools": tools, "settings": settings})
        return PolicyOutput(text=self.outputs.pop(0))


class WithTimeout(Minimal):
    accepts_timeout = True

    def generate(self, messages, *, tools=None, settings=None, timeout_s=None):
        self.kwargs.append({"timeout_s": timeout_s})
        return PolicyOutput(text=self.outputs.pop(0))


def test_every_policy_of_the_runtime_is_a_policy():
    for cls in (ScriptedPolicy, TransformersPolicy, OpenAIChatPolicy, SamplingPolicy):
        assert issubclass(cls, Policy), cls
    assert (TransformersPolicy.accepts_timeout, OpenAIChatPolicy.accepts_timeout) == (True, True)
    assert (ScriptedPolicy.accepts_timeout, SamplingPolicy.accepts_timeout) == (False, False)


def test_the_optional_members_have_no_op_defaults(demo_bundle):
    policy = Minimal(GOOD)
    assert policy.begin_request("price-1") is None
    with Agent(
        bundle=demo_bundle, policy=policy, catalogue=demo_catalogue(), connect_mcp=False
    ) as agent:
        traj = agent.run(price_request())
    assert (traj.outcome, traj.reply) == ("replied", "Link 3 is the Sunscreen SPF50 at 89 yuan.")
    assert traj.policy == "Minimal"  # no name: the class name
    assert all("timeout_s" not in kwargs for kwargs in policy.kwargs)  # accepts_timeout is False


def test_a_policy_that_accepts_a_timeout_gets_the_time_left_in_the_budget(demo_bundle):
    policy = WithTimeout(GOOD)
    policy.name = "with-timeout"
    with Agent(
        bundle=demo_bundle,
        policy=policy,
        catalogue=demo_catalogue(),
        connect_mcp=False,
        trajectory_budget_s=30,
    ) as agent:
        traj = agent.run(price_request())
    assert traj.policy == "with-timeout"
    timeouts = [kwargs["timeout_s"] for kwargs in policy.kwargs]
    assert len(timeouts) == 3 and all(0 < t <= 30 for t in timeouts)
    assert timeouts == sorted(timeouts, reverse=True)


def test_begin_request_is_called_before_each_request(demo_bundle):
    seen = []

    class Counting(Minimal):
        def begin_request(self, request_id):
            seen.append(request_id)
            self.outputs = list(GOOD)

    with Agent(
        bundle=demo_bundle, policy=Counting([]), catalogue=demo_catalogue(), connect_mcp=False
    ) as agent:
        agent.run(price_request(id="a"))
        agent.run(price_request(id="b"))
    assert seen == ["a", "b"]


def test_generate_is_the_one_member_a_policy_must_implement(demo_bundle):
    with pytest.raises(NotImplementedError, match="Bare must implement generate"):
        type("Bare", (Policy,), {})().generate([])


def test_an_object_that_is_not_a_policy_is_refused_with_what_to_do(demo_bundle):
    class DuckTyped:
        def generate(self, messages, **kwargs):
            return PolicyOutput(text="hi")

    with pytest.raises(
        TypeError, match="policy: DuckTyped is not a harness.policies.Policy; subclass it"
    ):
        Agent(bundle=demo_bundle, policy=DuckTyped(), catalogue=demo_catalogue(), connect_mcp=False)


def test_a_keyed_script_says_in_one_line_which_requests_it_answers():
    policy = ScriptedPolicy({f"dev-{i:04d}": ["x"] for i in range(482)})
    with pytest.raises(PolicyError) as raised:
        policy.begin_request("playground-price")
    message = str(raised.value)
    assert message == (
        "the script has no outputs for request 'playground-price'; "
        "it answers 482 request ids (dev-0000, dev-0001, dev-0002, ...)"
    )
    assert ScriptedPolicy(["x"]).answers() == "any request (one list of outputs)"
    assert ScriptedPolicy({"a": ["x"]}).answers() == "1 request id (a)"


def test_on_step_sees_each_step_while_the_request_runs(demo_bundle):
    seen = []

    def on_step(traj):
        seen.append(
            (
                len(traj.model_calls),
                len(traj.tool_calls),
                len(traj.skill_loads),
                len(traj.hook_decisions),
                traj.reply,
            )
        )

    with Agent(
        bundle=demo_bundle,
        policy=ScriptedPolicy(GOOD),
        catalogue=demo_catalogue(),
        connect_mcp=False,
        on_step=on_step,
    ) as agent:
        traj = agent.run(price_request())
    assert traj.outcome == "replied"
    # the first model call is seen alone, before any tool ran; the reply only at the end of run()
    assert seen[[s[0] for s in seen].index(1)][:3] == (1, 0, 0)
    assert [s[1] for s in seen] == sorted(s[1] for s in seen)  # steps only accumulate
    assert seen[-1][:3] == (3, 2, 1) and seen[-1][3] == len(traj.hook_decisions)
    assert all(reply == "" for *_, reply in seen[:-1])


def test_what_on_step_raises_ends_the_run_and_reaches_the_caller(demo_bundle):
    class Stop(Exception):
        pass

    def on_step(traj):
        if traj.tool_calls:
            raise Stop("cancel requested")

    policy = ScriptedPolicy(GOOD)
    with (
        Agent(
            bundle=demo_bundle,
            policy=policy,
            catalogue=demo_catalogue(),
            connect_mcp=False,
            on_step=on_step,
        ) as agent,
        pytest.raises(Stop, match="cancel requested"),
    ):
        agent.run(price_request())
    assert len(policy.calls) == 1  # stopped after the first tool call, before the second model call
