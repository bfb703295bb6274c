"""A panel of judges combined by majority vote (docs/architecture.md §6).

Accuracy: the majority of 0/1 votes; a tie counts as 0 (a fact-check that half
the panel fails is not trusted). Effectiveness: the median vote, which for
0 / 0.5 / 1 is the majority when there is one. Reasons: those given by the
judges that voted with the panel's Accuracy. A judge that fails (endpoint
down, unreadable answer) is left out of the vote and named in the dimensions.
"""

from __future__ import annotations

import statistics

from evaluation.judges.base import Judge, Reason, Verdict


class PanelJudge:
    def __init__(self, *, judges: list[Judge]) -> None:
        if not judges:
            raise ValueError("a panel needs at least one judge")
        self.judges = judges
        self.name = "panel(" + ",".join(j.name for j in judges) + ")"

    def judge(
        self, *, case: dict, reply: str, route: str = "public", trajectory: dict | None = None
    ) -> Verdict:
        verdicts: list[Verdict] = []
        failed: list[str] = []
        for judge in self.judges:
            try:
                verdicts.append(
                    judge.judge(case=case, reply=reply, route=route, trajectory=trajectory)
                )
            except (ValueError, KeyError, OSError, RuntimeError) as exc:
                failed.append(f"{judge.name}: {exc}")
        if not verdicts:
            raise RuntimeError("every judge of the panel failed: " + "; ".join(failed))
        ones = sum(v.accuracy for v in verdicts)
        accuracy = 1 if ones * 2 > len(verdicts) else 0
        effectiveness = float(statistics.median_low(sorted(v.effectiveness for v in verdicts)))
        reasons: list[Reason] = []
        for v in verdicts:
            if v.accuracy == accuracy:
                reasons += [r for r in v.reasons if r not in reasons]
        rubrics: dict[str, bool] = {}
        for key in {k for v in verdicts for k in v.rubrics}:
            votes = [v.rubrics[key] for v in verdicts if key in v.rubrics]
            rubrics[key] = sum(votes) * 2 > len(votes)
        dims: dict = {
            "accuracy": float(accuracy),
            "effectiveness": effectiveness,
            "votes_accuracy": ones / len(verdicts),
            "judges_failed": float(len(failed)),
        }
        return Verdict(
            accuracy=accuracy,
            effectiveness=effectiveness,
            dimensions=dims,
            rubrics=rubrics,
            reasons=reasons,
            judge=self.name,
        )
