"""Model calls by role (harness/policies/roles.py): each role's client settings come from the one
table, and every model call of the project is built by the one factory
(harness/policies/factory.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.policies import (
    GenerationSettings,
    Policy,
    PolicyError,
    PolicyOutput,
    RoleModel,
    role_model,
)
from harness.policies.openai_chat import KEYLESS
from harness.policies.roles import ROLES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("role", sorted(ROLES))
def test_each_roles_client_takes_its_timeout_retries_and_request_fields_from_the_table(role):
    model = role_model(role, "http://127.0.0.1:9/v1:m")
    client = model.policy.client
    assert (client.timeout, client.max_retries) == (ROLES[role].timeout_s, ROLES[role].retries)
    assert model.policy.extra_body == ROLES[role].extra_body()
    assert model.policy.settings.max_new_tokens == ROLES[role].max_new_tokens
    assert (model.role, model.label) == (role, "m")


def test_the_tables_values_are_those_the_callers_used_before_they_shared_the_factory():
    assert {role: (s.timeout_s, s.retries) for role, s in ROLES.items()} == {
        "agent": (60.0, 0),
        "replay": (120.0, 0),  # serving/agent_runner.py's POLICY_TIMEOUT_S, no retries
        "judge": (600.0, 2),
        "diagnoser": (120.0, 1),
        "paraphraser": (30.0, 0),
        "ifeval": (60.0, 0),
    }
    assert ROLES["diagnoser"].extra_body() == {"response_format": {"type": "json_object"}}


def test_an_unknown_role_is_named_with_the_roles():
    with pytest.raises(
        ValueError, match="unknown model role 'critic'; roles: agent, replay, judge, diagnoser"
    ):
        role_model("critic", "tiny")


def test_a_key_given_is_sent_none_reads_the_clis_variable_and_keyless_sends_the_placeholder(
    monkeypatch,
):
    monkeypatch.setenv("OPENAI_API_KEY", "from-env")
    assert (
        role_model("judge", "http://127.0.0.1:9/v1:m", api_key="given").policy.client.api_key
        == "given"
    )
    assert role_model("judge", "http://127.0.0.1:9/v1:m").policy.client.api_key == "from-env"
    assert (
        role_model("judge", "http://127.0.0.1:9/v1:m", api_key=KEYLESS).policy.client.api_key
        == KEYLESS
    )


def test_every_call_is_recorded_failed_ones_too():
    class Once(Policy):
        def __init__(self):
            self.left = 1

        def generate(self, messages, *, tools=None, settings=None):
            if not self.left:
                raise PolicyError("server down")
            self.left -= 1
            return PolicyOutput(text="ok", input_tokens=7, output_tokens=3, latency_s=0.25)

    model = RoleModel(role="paraphraser", policy=Once(), label="m")
    assert (
        model.chat([{"role": "user", "content": "hi"}], generation=GenerationSettings(seed=1)).text
        == "ok"
    )
    with pytest.raises(PolicyError):
        model.chat([{"role": "user", "content": "hi"}])
    assert model.usage() == {
        "role": "paraphraser",
        "model": "m",
        "calls": 2,
        "failed": 1,
        "input_tokens": 7,
        "output_tokens": 3,
        "seconds": model.usage()["seconds"],
    }
    assert model.calls[1].error == "PolicyError: server down"


def test_no_module_but_the_openai_policy_builds_an_openai_client():
    """The judge, the diagnoser and the paraphraser once built their own clients with their own
    timeouts."""
    allowed = {"harness/policies/openai_chat.py"}
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for package in ("harness", "evaluation", "serving", "training", "studio")
        for path in sorted((ROOT / package).rglob("*.py"))
        if str(path.relative_to(ROOT)) not in allowed
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"\bOpenAI\(", line)
    ]
    assert not found, (
        "build model clients with harness.policies.make_policy / role_model: " + ", ".join(found)
    )
