"""The verdict every judge returns, and the judge protocol.

A verdict carries the two scores of docs/architecture.md §6 (Accuracy 0/1, Effectiveness
0/0.5/1, their per-sample mean AVG), per-dimension scores, T3 rubric results
(ACQ, RC, TC, FI, TCO and their mean) and reason codes. Reason codes are short
stable strings (``unsupported_price``, ``missing_required_fact`` ...) that the
diagnosis clusters on; docs/evaluation.md lists them all.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

ACCURACY_REASONS = (
    "unsupported_price",
    "invented_discount",
    "unknown_coupon",
    "wrong_stock",
    "unknown_link",
    "forbidden_claim",
    "spoke_when_silent",
    "invented_figure",
    "wrong_product_name",
    "invented_name",
    "denied_known_facts",
)
EFFECTIVENESS_REASONS = (
    "no_reply",
    "wrong_language",
    "refused_legitimate",
    "missing_required_fact",
    "vague",
    "over_long",
    "fallback_reply",
    "answered_another_attribute",
    "wrong_product",
    "clarified_a_greeting",
    "not_welcomed",
    "did_not_ask_back",
    "aftersale_ignored",
    "aftersale_not_routed",
    "canned_reply",
    "no_asked_fact",
    "asked_fact_wrong",
    "wrong_fact_added",
    "answered_one_product",
    "request_not_acknowledged",
    "unrelated_reply",
)
TRAJECTORY_REASONS = (
    "missing_reply_skill",
    "missing_strategy_skill",
    "missing_tool_call",
    "wrong_tool_arguments",
    "redundant_tool_call",
    "distractor_tool_used",
    "tool_order_violated",
    "instruction_not_followed",
)


@dataclass(frozen=True)
class Reason:
    """Why a score is below full: a stable code, the dimension it hurts, a human detail."""

    code: str
    dimension: str
    detail: str = ""


@dataclass
class Verdict:
    """One judge's scores for one reply."""

    accuracy: int
    effectiveness: float
    dimensions: dict[str, float | None] = field(default_factory=dict)
    rubrics: dict[str, bool] = field(default_factory=dict)
    reasons: list[Reason] = field(default_factory=list)
    judge: str = ""

    @property
    def avg(self) -> float:
        return (self.accuracy + self.effectiveness) / 2.0

    @property
    def rubric_avg(self) -> float | None:
        return sum(self.rubrics.values()) / len(self.rubrics) if self.rubrics else None

    @property
    def reason_codes(self) -> list[str]:
        return [r.code for r in self.reasons]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["avg"] = self.avg
        data["rubric_avg"] = self.rubric_avg
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        return cls(
            accuracy=int(data["accuracy"]),
            effectiveness=float(data["effectiveness"]),
            dimensions=dict(data.get("dimensions", {})),
            rubrics=dict(data.get("rubrics", {})),
            reasons=[Reason(**r) for r in data.get("reasons", [])],
            judge=data.get("judge", ""),
        )


class Judge(Protocol):
    """Scores one reply to one case; ``trajectory`` is the runtime's ``Trajectory.to_dict()``."""

    name: str

    def judge(
        self, *, case: dict, reply: str, route: str = "public", trajectory: dict | None = None
    ) -> Verdict: ...
