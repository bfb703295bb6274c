"""Model calls by role: what each caller of a model (agent, the replay's agent, judge, diagnoser,
paraphraser, IFEval) is allowed per call, and the one record of what its calls used.

Every model call of the project is made through a ``Policy`` built by ``harness.policies.factory``
(``make_policy`` for the agent, ``role_model`` for the others), so a judge or a diagnoser runs on
any route the agent can: an OpenAI-compatible server, or the local model in process. The per-role
settings live in ``ROLES`` and nowhere else: the client's timeout and retries on an
OpenAI-compatible server (the key is the factory's rule), the default answer length, and whether the
server is asked for a JSON object. A ``RoleModel`` is a role's policy with those settings; it
records each call (tokens, seconds, error) in ``calls``, which a job can log with ``usage()``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from harness.policies.base import GenerationSettings, Policy, PolicyOutput


@dataclass(frozen=True)
class CallSettings:
    """How one role calls its model."""

    timeout_s: float
    """An OpenAI-compatible server's client timeout: the connection and each read of one call."""
    retries: int
    """The client's retries of a request that failed (connection error, 429, 5xx); 0: none."""
    max_new_tokens: int
    """The answer length a call of this role asks for unless the caller gives its own."""
    json_answer: bool = False
    """Whether an OpenAI-compatible server is asked for a JSON object (``response_format``)."""

    def extra_body(self) -> dict[str, Any]:
        """The request fields an OpenAI-compatible server gets for this role."""
        return {"response_format": {"type": "json_object"}} if self.json_answer else {}


#: The roles and their settings; the values are those each caller used before they shared one
#: factory.
ROLES: dict[str, CallSettings] = {
    # the agent's call: its trajectory budget bounds the request (harness.runtime.agent)
    "agent": CallSettings(timeout_s=60.0, retries=0, max_new_tokens=256),
    # the agent's call in a deployment replay (serving.agent_runner): the replay's request timeout
    # bounds the request; a loaded server's first token may take longer than a minute
    "replay": CallSettings(timeout_s=120.0, retries=0, max_new_tokens=256),
    # a verdict is worth waiting for and retrying: it scores a case
    "judge": CallSettings(timeout_s=600.0, retries=2, max_new_tokens=1024),
    # one call per diagnosis, a long answer of proposals in JSON
    "diagnoser": CallSettings(timeout_s=120.0, retries=1, max_new_tokens=4096, json_answer=True),
    # a failed call falls back to the offline paraphraser (harness.augment.paraphrase): never wait
    # long
    "paraphraser": CallSettings(timeout_s=30.0, retries=0, max_new_tokens=400),
    # greedy answers to instruction-following prompts (evaluation.ifeval)
    "ifeval": CallSettings(timeout_s=60.0, retries=0, max_new_tokens=256),
}


def role_settings(role: str) -> CallSettings:
    """The settings of ``role``; ``ValueError`` names the roles."""
    try:
        return ROLES[role]
    except KeyError:
        raise ValueError(f"unknown model role {role!r}; roles: {', '.join(ROLES)}") from None


@dataclass
class CallRecord:
    """What one call of a role used: the usage record every role keeps the same way."""

    role: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_s: float = 0.0
    error: str | None = None


@dataclass
class RoleModel:
    """One role's model: its policy, the role's call settings, and a record of every call."""

    role: str
    policy: Policy
    label: str
    """The model's short name, as verdicts and proposals cite it (``llm:<label>``)."""
    settings: CallSettings = field(init=False)
    calls: list[CallRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.settings = role_settings(self.role)
        self._lock = threading.Lock()

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        generation: GenerationSettings | None = None,
    ) -> PolicyOutput:
        """One call; ``generation`` defaults to greedy with the role's answer length. A failed call
        is recorded and raised (``PolicyError`` from a server)."""
        generation = generation or GenerationSettings(
            temperature=0.0, max_new_tokens=self.settings.max_new_tokens
        )
        started = time.perf_counter()
        record = CallRecord(role=self.role, model=self.label)
        try:
            # the timeout and retries are the client's (the factory built it with the role's); a
            # local model runs its call out, as the agent's does outside a trajectory budget
            output = self.policy.generate(messages, tools=tools, settings=generation)
        except Exception as exc:
            record.error, record.latency_s = (
                f"{type(exc).__name__}: {exc}",
                time.perf_counter() - started,
            )
            self._record(record)
            raise
        record.input_tokens, record.output_tokens = output.input_tokens, output.output_tokens
        record.latency_s = output.latency_s or (time.perf_counter() - started)
        self._record(record)
        return output

    def _record(self, record: CallRecord) -> None:
        with self._lock:
            self.calls.append(record)

    def usage(self) -> dict[str, Any]:
        """The calls so far, summed: what a job's log says the role used."""
        with self._lock:
            calls = list(self.calls)
        return {
            "role": self.role,
            "model": self.label,
            "calls": len(calls),
            "failed": sum(1 for c in calls if c.error),
            "input_tokens": sum(c.input_tokens for c in calls),
            "output_tokens": sum(c.output_tokens for c in calls),
            "seconds": round(sum(c.latency_s for c in calls), 3),
        }
