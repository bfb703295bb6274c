"""Judge calibration on a labelled dev-set: does the judge agree with the human labels?

For every case with a labelled candidate reply, the judge scores the reply and
the scores are compared with the human Accuracy and Effectiveness labels
(agreement, Cohen's kappa, confusion matrix, disagreeing cases), overall and
per defect type of the candidate.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.judges.base import Judge
from evaluation.stats import calibrate

# -- replies of finished run folders, to be labelled by people
# -----------------------------------------------------------------

# a labelled item's case must not carry the generator's candidates (their "human" labels are
# generated) nor a catalogue file name relative to a set the labelled file does not sit beside
_DROPPED_CASE_KEYS = ("candidates", "catalogue")


class RunFolderError(ValueError):
    """A run folder that cannot be drawn into a labelling queue; the message names the file."""


@dataclass
class RunReplies:
    """The replies of one finished ``python -m evaluation run`` folder, each with its case."""

    name: str  # the folder's name (made safe for case ids)
    policy: str
    harness: str
    harness_digest: str
    set_path: str
    started_at: str
    catalogue: Any  # harness.livestream.Catalogue, or None for the demo catalogue
    replies: list[dict[str, Any]] = field(default_factory=list)
    crashed: int = 0  # cases that crashed in the run: no reply to label


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def labelled_case_id(case_id: str, run_name: str) -> str:
    """The id a run's case takes in a labelling queue: ``<case>@<run>``, so the same case drawn
    from several runs stays several items (at most 120 characters, the tail a digest when cut)."""
    text = f"{case_id}@{run_name}"
    if len(text) <= 120:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{text[:107]}~{digest}"


def run_replies(run: str | Path) -> RunReplies:
    """Every reply of a finished run folder (``run.json``, ``results.jsonl``, ``report.json``) with
    its case from the run's set (gold kept, the generator's candidates dropped), route and full
    trajectory. The set must be the one the run pinned (its sha256); crashed cases are counted, not
    drawn."""
    from evaluation.cases import load_cases
    from evaluation.runner import RESULTS, load_results, resolve_catalogue
    from harness.userfiles import InputFileError

    run = Path(run)
    if not (run / "run.json").is_file():
        raise RunFolderError(
            f"{run}: no run.json; name a folder written by 'python -m evaluation run --out DIR'"
        )
    try:
        config = json.loads((run / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RunFolderError(f"{run / 'run.json'}: not a run record ({exc})") from None
    if not (run / "report.json").is_file():
        raise RunFolderError(
            f"{run}: the run is not finished (no report.json); finish it by running the same "
            "'python -m evaluation run' command again"
        )
    set_path = Path(str(config.get("set") or ""))
    if not set_path.is_file():
        raise RunFolderError(
            f"{run / 'run.json'}: its case set {set_path} does not exist here; run this from the "
            "folder the run was started in"
        )
    sha = hashlib.sha256(set_path.read_bytes()).hexdigest()
    if config.get("set_sha256") and sha != config["set_sha256"]:
        raise RunFolderError(
            f"{set_path}: changed since run {run.name} read it (sha256 {sha[:12]} != "
            f"{str(config['set_sha256'])[:12]}); its gold would not be the run's"
        )
    try:
        cases = {c["id"]: c for c in load_cases(set_path)}
        rows = load_results(run / RESULTS)
        catalogue = resolve_catalogue(set_path, list(cases.values()))
    except (InputFileError, ValueError, FileNotFoundError) as exc:
        raise RunFolderError(str(exc)) from None
    out = RunReplies(
        name=_safe_name(run.resolve().name),
        policy=str(config.get("policy") or ""),
        harness=str(config.get("harness_name") or ""),
        harness_digest=str(config.get("harness_digest") or ""),
        set_path=str(set_path),
        started_at=str(config.get("started_at") or ""),
        catalogue=catalogue,
    )
    for row in rows:
        if row.get("error") or row.get("route") not in ("public", "private", "silent"):
            out.crashed += 1
            continue
        case = cases.get(row["id"])
        if case is None:
            raise RunFolderError(
                f"{run / RESULTS}: case {row['id']!r} is not in {set_path}; the folder does not "
                "match its run.json"
            )
        case = {k: v for k, v in case.items() if k not in _DROPPED_CASE_KEYS}
        out.replies.append(
            {
                "case_id": labelled_case_id(case["id"], out.name),
                "case": {**case, "id": labelled_case_id(case["id"], out.name)},
                "reply": str(row.get("reply") or ""),
                "route": row["route"],
                "trajectory": row.get("trajectory"),
                "provenance": {
                    "kind": "run_folder",
                    "run": out.name,
                    "case_id": case["id"],
                    "policy": out.policy,
                    "harness": out.harness,
                    "harness_digest": out.harness_digest,
                    "set": out.set_path,
                    "started_at": out.started_at,
                },
            }
        )
    if not out.replies:
        raise RunFolderError(f"{run / RESULTS}: no finished reply to label")
    return out


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
