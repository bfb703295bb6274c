"""Judge calibration on a labelled dev-set: does the judge agree with the human labels?

For every case with a labelled candidate reply, the judge scores the reply and
the scores are compared with the human Accuracy and Effectiveness labels
(agreement, Cohen's kappa, confusion matrix, disagreeing cases), overall and
per defect type of the candidate.
"""

from __future__ import annotations

from typing import Any

from evaluation.judges.base import Judge
from evaluation.stats import calibrate


def calibrate_judge(*, cases: list[dict], judge: Judge) -> dict[str, Any]:
    human_acc, judge_acc, human_eff, judge_eff = {}, {}, {}, {}
    by_defect: dict[str, list[bool]] = {}
    reasons: dict[str, list[str]] = {}
    for case in cases:
        for cand in case.get("candidates", []):
            if "human" not in cand:
                continue
            key = f"{case['id']}/{cand['id']}"
            # a labelled reply from real traffic keeps its trajectory: the judge sees what it sees
            # in evaluation
            verdict = judge.judge(
                case=case,
                reply=cand["reply"],
                route=cand.get("route", "public"),
                trajectory=cand.get("trajectory"),
            )
            human_acc[key], judge_acc[key] = cand["human"]["accuracy"], verdict.accuracy
            human_eff[key], judge_eff[key] = (
                float(cand["human"]["effectiveness"]),
                verdict.effectiveness,
            )
            by_defect.setdefault(cand.get("defect") or "good", []).append(
                verdict.accuracy == cand["human"]["accuracy"]
            )
            reasons[key] = verdict.reason_codes
    if not human_acc:
        raise ValueError("no case carries a candidate with human labels (candidates[].human)")
    acc = calibrate(human=human_acc, judge=judge_acc, labels=[0, 1])
    eff = calibrate(human=human_eff, judge=judge_eff, labels=[0.0, 0.5, 1.0])
    for row in acc.disagreements + eff.disagreements:
        row["judge_reasons"] = reasons[row["id"]]
    return {
        "judge": judge.name,
        "n": acc.n,
        "accuracy": acc.to_dict(),
        "effectiveness": eff.to_dict(),
        "accuracy_agreement_by_defect": {k: sum(v) / len(v) for k, v in sorted(by_defect.items())},
    }


def calibration_markdown(report: dict[str, Any]) -> str:
    acc, eff = report["accuracy"], report["effectiveness"]
    lines = [
        f"# Judge calibration: {report['judge']}",
        "",
        f"{report['n']} labelled candidate replies.",
        "",
        "| label | agreement | Cohen's kappa |",
        "|---|---|---|",
        f"| Accuracy | {100 * acc['agreement']:.2f}% | {acc['kappa']:.3f} |",
        f"| Effectiveness | {100 * eff['agreement']:.2f}% | {eff['kappa']:.3f} |",
        "",
        "Accuracy confusion (rows human, columns judge; labels 0, 1): " + str(acc["confusion"]),
        "",
        "Effectiveness confusion (labels 0, 0.5, 1): " + str(eff["confusion"]),
        "",
        "| candidate defect | Accuracy agreement |",
        "|---|---|",
    ]
    lines += [
        f"| {k} | {100 * v:.1f}% |" for k, v in report["accuracy_agreement_by_defect"].items()
    ]
    dis = acc["disagreements"] + eff["disagreements"]
    if dis:
        lines += ["", "## Disagreements", ""]
        lines += [
            f"- {d['id']}: human {d['human']}, judge {d['judge']} ({', '.join(d['judge_reasons'])})"
            for d in dis[:100]
        ]
    return "\n".join(lines) + "\n"
