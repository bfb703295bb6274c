"""Judge calibration: does the judge agree with the labels people wrote?

For every case with a labelled candidate reply, the judge scores the reply and
the scores are compared with the human Accuracy and Effectiveness labels
(agreement and Cohen's kappa with bootstrap intervals, confusion matrix,
disagreeing cases), overall and per defect type of the candidate.

The human set is a *calibration file* (``hs-calibration/1``, docs/evaluation.md
"Calibration files"): the replies people labelled in the studio's annotation
queue, each with its case, every label (who, when) and its origin, split once
by case digest into a development part and a held-out part. This module draws
run folders' replies for labelling (``run_replies``), writes and reads those
files, splits them, and measures a judge on each part (``calibrate_parts``).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
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


# -- calibration files (hs-calibration/1)
# -----------------------------------------------------------------------------------

CALIBRATION_FORMAT = "hs-calibration/1"
DEV, HELDOUT = "dev", "heldout"
PARTS = (DEV, HELDOUT)
HELDOUT_SHARE = 1 / 3  # the least share of case digests kept held out
# a sample that can decide: at least this many labelled replies, every category present
MIN_DECIDING_REPLIES = 100
RESAMPLES = 2000
ACCURACY_LABELS = [0, 1]
EFFECTIVENESS_LABELS = [0.0, 0.5, 1.0]


class CalibrationFileError(ValueError):
    """A calibration file that cannot be read; the message names the line and field."""


def case_digest(case: Mapping[str, Any]) -> str:
    """The sha256 of a case's request (its request fields but the id): the same request drawn from
    several runs has one digest, so it lands in one part of the split."""
    from evaluation.cases import REQUEST_FIELDS

    request = {k: case[k] for k in REQUEST_FIELDS if k in case and k != "id"}
    text = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _bucket(digest: str) -> float:
    return int(digest[:8], 16) / 0xFFFFFFFF


def assign_parts(
    digests: Iterable[str],
    *,
    previous: Mapping[str, str] | None = None,
    heldout_share: float = HELDOUT_SHARE,
) -> dict[str, str]:
    """Each digest's part, split once: a digest a previous version placed keeps its part; a new one
    is held out when its bucket (first 8 hex digits / 0xffffffff) is below ``heldout_share``, and
    new development digests with the lowest buckets move to held-out until at least that share of
    all digests is held out. Deterministic: the same digests and previous split give the same
    parts."""
    previous = previous or {}
    unique = sorted(set(digests))
    parts = {d: previous[d] for d in unique if previous.get(d) in PARTS}
    new = [d for d in unique if d not in parts]
    for d in new:
        parts[d] = HELDOUT if _bucket(d) < heldout_share else DEV
    missing = math.ceil(len(unique) * heldout_share - 1e-9) - sum(
        1 for p in parts.values() if p == HELDOUT
    )
    for d in sorted((d for d in new if parts[d] == DEV), key=_bucket)[: max(0, missing)]:
        parts[d] = HELDOUT
    return parts


def _bootstrap(
    human: list, judge: list, labels: list, *, resamples: int = RESAMPLES, seed: int = 0
) -> dict[str, list[float]]:
    """95% percentile intervals of agreement and Cohen's kappa, resampling the labelled replies."""
    import numpy as np

    n, size = len(human), len(labels)
    index = {label: k for k, label in enumerate(labels)}
    h = np.array([index[x] for x in human])
    j = np.array([index[x] for x in judge])
    draws = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    cells = h[draws] * size + j[draws]
    counts = np.stack([(cells == k).sum(axis=1) for k in range(size * size)], axis=1)
    counts = counts.reshape(resamples, size, size) / n  # rows: first labelling, columns: second
    observed = np.trace(counts, axis1=1, axis2=2)
    expected = (counts.sum(axis=2) * counts.sum(axis=1)).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(
            expected >= 1.0 - 1e-12,
            np.where(observed >= 1.0 - 1e-12, 1.0, 0.0),
            (observed - expected) / (1.0 - expected),
        )
    agreement = observed
    return {
        "agreement_interval": [
            float(np.percentile(agreement, 2.5)),
            float(np.percentile(agreement, 97.5)),
        ],
        "kappa_interval": [float(np.percentile(kappas, 2.5)), float(np.percentile(kappas, 97.5))],
    }


def compare_labels(
    first: Mapping[str, Any], second: Mapping[str, Any], *, labels: list, resamples: int = RESAMPLES
) -> dict[str, Any]:
    """Agreement, Cohen's kappa (``evaluation.stats.calibrate``) and their bootstrap intervals of
    two labellings of the same replies (a person and a judge, or two people)."""
    result = calibrate(human=first, judge=second, labels=labels).to_dict()
    if resamples <= 0:  # no intervals (a speed benchmark times the judge alone)
        return result
    ids = sorted(set(first) & set(second))
    result.update(
        _bootstrap([first[i] for i in ids], [second[i] for i in ids], labels, resamples=resamples)
    )
    return result


def labeller_agreement(rows: list[dict[str, Any]], *, resamples: int = RESAMPLES) -> dict[str, Any]:
    """Agreement and kappa between the first and second labeller of every reply two people labelled
    (rows of a calibration file); ``n`` 0 when none was."""
    first_acc, second_acc, first_eff, second_eff = {}, {}, {}, {}
    for row in rows:
        labels = sorted(row["labels"], key=lambda lb: lb["labelled_at"])
        if len(labels) < 2:
            continue
        key = row["case"]["id"]
        first_acc[key], second_acc[key] = labels[0]["accuracy"], labels[1]["accuracy"]
        first_eff[key] = float(labels[0]["effectiveness"])
        second_eff[key] = float(labels[1]["effectiveness"])
    if not first_acc:
        return {"n": 0}
    return {
        "n": len(first_acc),
        "accuracy": _summary(
            compare_labels(first_acc, second_acc, labels=ACCURACY_LABELS, resamples=resamples)
        ),
        "effectiveness": _summary(
            compare_labels(first_eff, second_eff, labels=EFFECTIVENESS_LABELS, resamples=resamples)
        ),
    }


def _summary(result: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "n",
        "agreement",
        "kappa",
        "agreement_interval",
        "kappa_interval",
        "labels",
        "confusion",
    )
    return {k: result[k] for k in keys if k in result}


def sample_problems(
    cases: list[dict[str, Any]], *, min_replies: int = MIN_DECIDING_REPLIES
) -> list[str]:
    """Why a labelled sample cannot decide a calibration: too few labelled replies, or a category
    with none. Empty when it can."""
    from evaluation.cases import CATEGORIES

    labelled = [c for c in cases for cand in c.get("candidates") or [] if "human" in cand]
    problems = []
    if len(labelled) < min_replies:
        problems.append(
            f"{len(labelled)} labelled replies; a calibration needs at least {min_replies}"
        )
    missing = [c for c in CATEGORIES if c not in {case.get("category") for case in labelled}]
    if missing:
        problems.append(f"no labelled reply of the categories {', '.join(missing)}")
    return problems


@dataclass
class CalibrationFile:
    header: dict[str, Any]
    rows: list[dict[str, Any]]  # {"part", "digest", "case", "labels", "origin"}

    def cases(self, part: str | None = None) -> list[dict[str, Any]]:
        return [r["case"] for r in self.rows if part is None or r["part"] == part]

    @property
    def catalogue(self):
        """The catalogue the cases refer to (harness.livestream.Catalogue), the demo's when none."""
        from harness.livestream import Catalogue, demo_catalogue

        data = self.header.get("catalogue")
        return Catalogue.from_dict(data, source="calibration file") if data else demo_catalogue()


def calibration_text(*, header: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """A calibration file: the header line, then one row per labelled reply (sorted by part and case
    id, so a file diff shows what changed)."""
    rows = sorted(rows, key=lambda r: (PARTS.index(r["part"]), r["case"]["id"]))
    counts = {p: sum(1 for r in rows if r["part"] == p) for p in PARTS}
    header = {
        "format": CALIBRATION_FORMAT,
        **{k: v for k, v in header.items() if k != "format"},
        "replies": len(rows),
        "parts": counts,
        "labeller_agreement": labeller_agreement(rows),
    }
    lines = [json.dumps(header, ensure_ascii=False, sort_keys=True)]
    lines += [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows]
    return "\n".join(lines) + "\n"


_LABEL_KEYS = {"labeller", "labelled_at", "accuracy", "effectiveness", "category", "route", "note"}


def parse_calibration_text(text: str, *, source: str = "<calibration file>") -> CalibrationFile:
    """A calibration file's header and rows, every row checked: a valid case with one labelled
    reply, its part and digest as the split recorded them, and every label with its labeller and
    time. CalibrationFileError names the first problem's line."""
    from evaluation.cases import validate_case

    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise CalibrationFileError(f"{source}: empty; line 1 is the {CALIBRATION_FORMAT} header")
    try:
        header = json.loads(lines[0])
    except ValueError as exc:
        raise CalibrationFileError(f"{source}:1: not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("format") != CALIBRATION_FORMAT:
        raise CalibrationFileError(
            f"{source}:1: format must be {CALIBRATION_FORMAT!r} (a file 'annotation_export' "
            "wrote from an annotation queue)"
        )
    rows = []
    seen = set()
    for number, line in enumerate(lines[1:], 2):
        where = f"{source}:{number}"
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise CalibrationFileError(f"{where}: not JSON ({exc})") from None
        if not isinstance(row, dict):
            raise CalibrationFileError(f"{where}: a row is a JSON object")
        case = row.get("case")
        problems = validate_case(case)
        if problems:
            field_, message = problems[0]
            raise CalibrationFileError(f"{where}: case.{field_}: {message}")
        labelled = [c for c in case.get("candidates") or [] if "human" in c]
        if len(labelled) != 1:
            raise CalibrationFileError(f"{where}: case.candidates: exactly one labelled reply")
        if case["id"] in seen:
            raise CalibrationFileError(f"{where}: case.id: {case['id']!r} twice")
        seen.add(case["id"])
        if row.get("part") not in PARTS:
            raise CalibrationFileError(f"{where}: part: dev or heldout, got {row.get('part')!r}")
        if row.get("digest") != case_digest(case):
            raise CalibrationFileError(
                f"{where}: digest: not the sha256 of the case's request; the row was edited"
            )
        labels = row.get("labels")
        if not isinstance(labels, list) or not labels:
            raise CalibrationFileError(
                f"{where}: labels: every labelled reply keeps its labels (who, when)"
            )
        for k, label in enumerate(labels):
            if not isinstance(label, dict) or not set(label) >= _LABEL_KEYS:
                raise CalibrationFileError(
                    f"{where}: labels[{k}]: needs {', '.join(sorted(_LABEL_KEYS))}"
                )
            if not str(label["labeller"]).strip() or not str(label["labelled_at"]).strip():
                raise CalibrationFileError(f"{where}: labels[{k}]: labeller and labelled_at")
        if not isinstance(row.get("origin"), dict):
            raise CalibrationFileError(f"{where}: origin: the queue item the reply came from")
        rows.append(row)
    parts: dict[str, set[str]] = {}
    for row in rows:
        parts.setdefault(row["digest"], set()).add(row["part"])
    split = [d for d, p in parts.items() if len(p) > 1]
    if split:
        raise CalibrationFileError(
            f"{source}: the request {split[0][:12]} is in both parts; one request, one part"
        )
    if not rows:
        raise CalibrationFileError(f"{source}: no labelled reply after the header")
    return CalibrationFile(header=header, rows=rows)


def read_calibration_file(path: str | Path) -> CalibrationFile:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CalibrationFileError(f"{path}: cannot be read ({exc.strerror})") from None
    return parse_calibration_text(text, source=str(path))


def is_calibration_file(path: str | Path) -> bool:
    """Whether the file starts with a calibration file's header (else it is a case set)."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            first = handle.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return (
        f'"format": "{CALIBRATION_FORMAT}"' in first or f'"format":"{CALIBRATION_FORMAT}"' in first
    )


def calibrate_parts(
    *, calibration: CalibrationFile, judge: Judge, resamples: int = RESAMPLES
) -> dict[str, Any]:
    """``calibrate_judge`` on each part of a calibration file (dev, held-out) and on all of it."""
    report = {
        "judge": judge.name,
        "set": calibration.header.get("name", ""),
        "version": calibration.header.get("version"),
        "labeller_agreement": labeller_agreement(calibration.rows, resamples=resamples),
        "parts": {},
    }
    for part in PARTS:
        cases = calibration.cases(part)
        if cases:
            report["parts"][part] = calibrate_judge(cases=cases, judge=judge, resamples=resamples)
    report["all"] = calibrate_judge(cases=calibration.cases(), judge=judge, resamples=resamples)
    return report


def parts_markdown(report: dict[str, Any]) -> str:
    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    def row(name: str, part: str, dim: dict) -> str:
        lo, hi = dim["agreement_interval"]
        klo, khi = dim["kappa_interval"]
        return (
            f"| {part} | {name} | {dim['n']} | {pct(dim['agreement'])} [{pct(lo)}, {pct(hi)}] | "
            f"{dim['kappa']:.2f} [{klo:.2f}, {khi:.2f}] |"
        )

    lines = [
        f"# Judge calibration: {report['judge']} on {report['set']} v{report['version']}",
        "",
        "| part | label | replies | agreement [95% interval] | Cohen's kappa [95% interval] |",
        "|---|---|---|---|---|",
    ]
    for part in PARTS:
        if part in report["parts"]:
            r = report["parts"][part]
            name = "held-out" if part == HELDOUT else "dev"
            lines += [
                row("Accuracy", name, r["accuracy"]),
                row("Effectiveness", name, r["effectiveness"]),
            ]
    between = report["labeller_agreement"]
    lines.append("")
    if between.get("n"):
        lines.append(
            f"Between labellers ({between['n']} replies labelled twice): Accuracy "
            f"{pct(between['accuracy']['agreement'])} (kappa {between['accuracy']['kappa']:.2f}), "
            f"Effectiveness {pct(between['effectiveness']['agreement'])} "
            f"(kappa {between['effectiveness']['kappa']:.2f})."
        )
    else:
        lines.append("No reply was labelled by two people.")
    return "\n".join(lines + disagreement_lines(report["all"])) + "\n"


def disagreement_lines(result: dict[str, Any]) -> list[str]:
    """The report's "Disagreements" section for one ``calibrate_judge`` result: the first 100
    replies where human and judge differ (Accuracy's, then Effectiveness's); none when none."""
    dis = result["accuracy"]["disagreements"] + result["effectiveness"]["disagreements"]
    if not dis:
        return []
    return ["", "## Disagreements", ""] + [
        f"- {d['id']}: human {d['human']}, judge {d['judge']} ({', '.join(d['judge_reasons'])})"
        for d in dis[:100]
    ]


def calibrate_judge(
    *, cases: list[dict], judge: Judge, resamples: int = RESAMPLES
) -> dict[str, Any]:
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
    acc = compare_labels(human_acc, judge_acc, labels=ACCURACY_LABELS, resamples=resamples)
    eff = compare_labels(human_eff, judge_eff, labels=EFFECTIVENESS_LABELS, resamples=resamples)
    for row in acc["disagreements"] + eff["disagreements"]:
        row["judge_reasons"] = reasons[row["id"]]
    return {
        "judge": judge.name,
        "n": acc["n"],
        "accuracy": acc,
        "effectiveness": eff,
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
    return "\n".join(lines + disagreement_lines(report)) + "\n"
