"""The failed case as diagnosis sees it, read from per-case evaluation results.

Diagnosis only needs a little of each scored case: its id and category, the
scores, the judges' reason codes and comments, the viewer's comment, the
reply, and which tools and skills the trajectory used. ``failure_from_result``
reads that from a result row (the case scorer's, ``evaluation.scoring``, or a
stored one with flat scores) and the case it was scored on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evaluation.scoring import passed

CATEGORY_REPLY_SKILL = {
    "product_qa": "item_qa",
    "chitchat": "chillchat",
    "clarification": "clarification",
    "aftersale": "aftersale",
    "promotion": "general_discount",
    "presentation_order": "change_order",
    "faq": "faq_reply",
    "silent_refusal": "refusal",
    "greeting": "greet",
}


@dataclass(frozen=True)
class FailureCase:
    """One case whose Accuracy or Effectiveness fell short."""

    case_id: str
    category: str
    accuracy: float
    effectiveness: float
    reasons: tuple[str, ...]  # judge reason codes, most important first
    comment: str  # the viewer's comment(s), joined
    reply: str
    route: str = ""
    tools_called: tuple[str, ...] = ()
    skills_loaded: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # the judges' free-text comments
    expected_tools: tuple[str, ...] = ()
    expected_skills: tuple[str, ...] = ()
    hooks_blocked: tuple[
        str, ...
    ] = ()  # ids of the hooks that blocked a step (one entry per block)
    hook_messages: tuple[str, ...] = ()  # what those hooks said, in the same order
    outcome: str = ""  # the trajectory's outcome: replied | silent | fallback | suppressed
    outcome_reason: str = ""  # why the runtime ended it that way (budget, round limit, hook)
    total_s: float = 0.0  # wall time of the request
    rounds: int = 0  # model rounds the request used
    steps: tuple[
        tuple[int, str], ...
    ] = ()  # (round, "name {arguments}") of every tool call, skill loads included

    @property
    def used_harness(self) -> bool:
        """Some round called a tool or loaded a skill (blocked calls count: the model made them)."""
        return bool(self.steps)

    @property
    def progressing_when_stopped(self) -> bool:
        """The last round made a call no earlier round had made: the model was still doing new
        work."""
        earlier = {step for rnd, step in self.steps if rnd < self.rounds}
        return any(rnd == self.rounds and step not in earlier for rnd, step in self.steps)

    @property
    def avg(self) -> float:
        return (self.accuracy + self.effectiveness) / 2

    @property
    def text(self) -> str:
        """What text similarity compares: the comment, the reply and the judges' notes. A fallback's
        reply is the Harness's fallback text, the same for every case that fell back, so it is left
        out: it would make every such failure look alike."""
        reply = "" if self.outcome == "fallback" else self.reply
        return " ".join([self.comment, reply, *self.notes])

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "category": self.category,
            "accuracy": self.accuracy,
            "effectiveness": self.effectiveness,
            "reasons": list(self.reasons),
            "comment": self.comment,
            "reply": self.reply,
            "route": self.route,
            "tools_called": list(self.tools_called),
            "skills_loaded": list(self.skills_loaded),
        }


def _reason_codes(value: Any) -> tuple[list[str], list[str]]:
    codes: list[str] = []
    notes: list[str] = []
    for item in value or []:
        if isinstance(item, str):
            codes.append(item)
        elif isinstance(item, Mapping):
            code = item.get("code") or item.get("reason")
            if code:
                codes.append(str(code))
            text = item.get("message") or item.get("detail") or item.get("text")
            if text:
                notes.append(str(text))
    return codes, notes


def comment_text(case: Mapping[str, Any]) -> str:
    parts = []
    for comment in case.get("comments") or []:
        parts.append(comment.get("text", "") if isinstance(comment, Mapping) else str(comment))
    return " / ".join(p for p in parts if p)


def failure_from_result(*, result: Mapping[str, Any], case: Mapping[str, Any]) -> FailureCase:
    """Build a FailureCase from one scored result and its case (a case-format dict)."""
    trajectory = result.get("trajectory") or {}
    verdict = result.get("verdict") or {}
    codes, notes = _reason_codes(result.get("reasons") or verdict.get("reasons"))
    gold = case.get("gold") or {}
    blocks = [
        d
        for d in trajectory.get("hook_decisions") or []
        if d.get("decision") not in (None, "allow")
    ]
    return FailureCase(
        case_id=str(result.get("case_id") or result.get("id") or case.get("id")),
        category=str(result.get("category") or case.get("category") or "unknown"),
        accuracy=float(_scores(result)["accuracy"] or 0.0),
        effectiveness=float(_scores(result)["effectiveness"] or 0.0),
        reasons=tuple(dict.fromkeys(codes)),
        comment=comment_text(case),
        reply=str(
            result.get("reply") if result.get("reply") is not None else trajectory.get("reply", "")
        ),
        route=str(result.get("route") or trajectory.get("route") or ""),
        tools_called=tuple(c.get("name", "") for c in trajectory.get("tool_calls") or []),
        skills_loaded=tuple(s.get("skill", "") for s in trajectory.get("skill_loads") or []),
        notes=tuple(notes),
        expected_tools=tuple(c.get("name", "") for c in gold.get("tool_calls") or []),
        expected_skills=tuple(gold.get("reply_skills") or []),
        hooks_blocked=tuple(d.get("hook_id", "") for d in blocks),
        hook_messages=tuple(d.get("message", "") for d in blocks),
        outcome=str(trajectory.get("outcome") or ""),
        outcome_reason=str(trajectory.get("outcome_reason") or ""),
        total_s=float((trajectory.get("timings") or {}).get("total_s") or 0.0),
        rounds=int(trajectory.get("rounds") or 0),
        steps=tuple(
            (
                int(c.get("round") or 0),
                f"{c.get('name', '')} {json.dumps(c.get('arguments'), sort_keys=True)}",
            )
            for c in trajectory.get("tool_calls") or []
        ),
    )


def _scores(result: Mapping[str, Any]) -> Mapping[str, Any]:
    """Accuracy and Effectiveness of a stored row (flat) or of a scorer row (inside its verdict)."""
    return result if result.get("accuracy") is not None else (result.get("verdict") or {})


def is_failure(result: Mapping[str, Any]) -> bool:
    """A scored case that did not pass (``evaluation.scoring.passed``); an unscored row is no
    failure."""
    scores = _scores(result)
    if scores.get("accuracy") is None or scores.get("effectiveness") is None:
        return False
    return not passed(scores)


def failures_from_results(
    *, results: Iterable[Mapping[str, Any]], cases: Mapping[str, Mapping[str, Any]]
) -> list[FailureCase]:
    """The failed cases among ``results``; ``cases`` maps case id -> case dict."""
    out: list[FailureCase] = []
    for result in results:
        if not is_failure(result):
            continue
        case_id = str(result.get("case_id") or result.get("id"))
        out.append(failure_from_result(result=result, case=cases.get(case_id, {"id": case_id})))
    return out


@dataclass
class FailureSummary:
    """Counts a diagnosis reports next to its clusters."""

    total: int
    failed: int
    by_reason: dict[str, int] = field(default_factory=dict)
    by_category: dict[str, int] = field(default_factory=dict)
