"""The one case scorer: a case, a Harness and a policy in; one result row out.

Every evaluation loop of the project (the CLI runner, the studio's evaluation
runs, training's self-evaluation) scores a case here, so a case gets the same
reply, route, outcome and verdict wherever it runs:

- the case runs under its own Harness variant (``bundle_for_case``: the extra
  tools of a Tool Robustness case, the instruction block of a Prompt
  Robustness case; ``harness_variant_of``: an HSA variant of the evaluated
  Harness for a compatibility-set case, judged on its remapped gold), and the
  extra tools answer with the case's canned results;
- the judge uses the Harness version's own settings (``max_reply_chars``), see
  ``judge_for``;
- how the request ended is classified once (``request_outcome``): replied,
  fallback, suppressed, silent, or error (a runtime error, every model call
  failed, or the case crashed). The serving replay reads the same function.

A row is ``{id, category, reply, route, outcome, verdict, trajectory,
latency_s}`` plus ``error`` for a case that crashed (recorded, the run goes on).
The loops only store rows (JSON Lines, ``CaseResult``) and resume.
"""

from __future__ import annotations

import time
from typing import Any

from evaluation.case_harness import (
    CannedToolRunner,
    bundle_for_case,
    canned_results,
    harness_variant_of,
)
from evaluation.cases import case_request
from evaluation.judges import make_judge
from evaluation.judges.base import Judge, Reason, Verdict
from harness.runtime.trajectory import OUTCOMES as RUNTIME_OUTCOMES

OUTCOMES = ("replied", "fallback", "suppressed", "silent", "error")
"""How a request ended: the runtime's four endings (``RUNTIME_OUTCOMES``) and ``error``, a request
whose result says nothing about the Harness: the runtime crashed, the endpoint never answered, the
case failed."""


def outcome_and_reason(
    trajectory: dict[str, Any] | None, *, error: str | None = None
) -> tuple[str, str]:
    """How a request ended (one of ``OUTCOMES``) and why, from its trajectory
    (``Trajectory.to_dict()``)."""
    if error:
        return "error", error
    if not trajectory or trajectory.get("outcome") not in RUNTIME_OUTCOMES:
        return "error", "no trajectory was recorded"
    reason = trajectory.get("outcome_reason") or ""
    if reason.startswith("runtime error"):
        return "error", reason
    calls = trajectory.get("model_calls") or []
    if calls and all(c.get("error") for c in calls):
        # the endpoint never answered: a fallback reply here would hide a dead server
        return "error", f"every model call failed: {calls[-1]['error']}"
    return trajectory["outcome"], reason


def request_outcome(trajectory: dict[str, Any] | None, *, error: str | None = None) -> str:
    """One of ``OUTCOMES`` (see ``outcome_and_reason``)."""
    return outcome_and_reason(trajectory, error=error)[0]


def passed(scores: dict[str, Any]) -> bool:
    """A case passes when it is fully right: Accuracy 1 and Effectiveness 1 (AVG 1).

    ``scores`` is a verdict or a flattened row with ``accuracy`` and ``effectiveness``. Newly
    failing and newly passing (``evaluation.compare``) and a summary's ``failed`` count read
    this."""
    return float(scores.get("accuracy") or 0) >= 1 and float(scores.get("effectiveness") or 0) >= 1


def judge_for(bundle, *, catalogue, spec: str = "programmatic") -> Judge:
    """The judge ``spec`` with the Harness version's settings (its ``max_reply_chars``)."""
    return make_judge(spec, catalogue=catalogue, max_reply_chars=bundle.prompt.max_reply_chars)


def error_verdict(detail: str) -> dict[str, Any]:
    """The verdict of a case that crashed: zero, with the ``run_error`` reason."""
    return Verdict(
        accuracy=0, effectiveness=0.0, reasons=[Reason("run_error", "run", detail)], judge="none"
    ).to_dict()


class CaseScorer:
    """Scores cases on one base Agent (its Harness, policy, catalogue and limits) with one judge.

    Agents for per-case Harness variants are made from the base Agent's settings and share its
    MCP hub and tool runner instead of starting the servers again for every case. One scorer
    per thread: policies keep per-request state.
    """

    def __init__(self, *, agent, judge: Judge) -> None:
        self.base = agent
        self.judge = judge
        self._variant = None

    @classmethod
    def for_bundle(
        cls, *, bundle, policy, catalogue, judge: str | Judge = "programmatic", **agent_kwargs: Any
    ) -> CaseScorer:
        """A scorer with a fresh Agent; ``agent_kwargs`` go to ``harness.runtime.Agent``."""
        from harness.runtime import Agent

        if isinstance(judge, str):
            judge = judge_for(bundle, catalogue=catalogue, spec=judge)
        return cls(
            agent=Agent(bundle=bundle, policy=policy, catalogue=catalogue, **agent_kwargs),
            judge=judge,
        )

    @property
    def bundle(self):
        return self.base.bundle

    def agent_for(self, case: dict[str, Any], *, harness=None):
        """The Agent that runs ``case``: the base one, or one for the case's Harness variant
        (built on ``harness``, the case's HSA variant of the base Harness, when given)."""
        bundle = bundle_for_case(harness or self.base.bundle, case)
        if bundle.digest == self.base.bundle.digest:
            return self.base
        if self._variant is None or self._variant.bundle.digest != bundle.digest:
            from harness.runtime import Agent

            base = self.base
            variant = Agent(
                bundle=bundle,
                policy=base.policy,
                catalogue=base.catalogue,
                failure_injection=base.failure_injection,
                generation=base.generation,
                connect_mcp=False,
                max_rounds=base.max_rounds,
                trajectory_budget_s=base.budget_s,
                tool_timeout_s=base.tool_timeout_s,
            )
            variant.demonstration_messages = base.demonstration_messages
            variant.runner.close()
            variant.hub, variant.runner = base.hub, base.runner
            self._variant = variant
        self._variant.policy = self.base.policy
        return self._variant

    def score(self, case: dict[str, Any]) -> dict[str, Any]:
        """Run and judge one case; a case that crashes gives an ``error`` row instead of raising."""
        row: dict[str, Any] = {"id": case["id"], "category": case.get("category", "unknown")}
        started = time.perf_counter()
        try:
            harness, case = harness_variant_of(self.base.bundle, case)
            agent = self.agent_for(case, harness=harness)
            canned = canned_results(case)
            inner = agent.runner
            if canned:
                agent.runner = CannedToolRunner(inner, canned)
            try:
                trajectory = agent.run(case_request(case)).to_dict()
            finally:
                agent.runner = inner
            verdict = self.judge.judge(
                case=case,
                reply=trajectory["reply"],
                route=trajectory["route"],
                trajectory=trajectory,
            )
            row.update(
                reply=trajectory["reply"],
                route=trajectory["route"],
                outcome=request_outcome(trajectory),
                verdict=verdict.to_dict(),
                trajectory=trajectory,
                latency_s=float(trajectory["timings"].get("total_s") or 0.0),
            )
        except Exception as exc:  # noqa: BLE001 - one broken case must not stop a 1,000-case run
            detail = f"{type(exc).__name__}: {exc}"
            row.update(
                reply="",
                route="error",
                outcome="error",
                verdict=error_verdict(detail),
                trajectory=None,
                latency_s=time.perf_counter() - started,
                error=detail,
            )
        return row

    def close(self) -> None:
        self.base.close()  # variants share its hub and runner
