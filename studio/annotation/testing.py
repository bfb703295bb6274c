"""A calibrated judge for tests that need the release gates to read judged figures as trusted: a
small labelled set from a generated world (its candidate replies carry human labels) and the real
calibration (``calibration.calibration_run``) of the studio's evaluation judge against it."""

from __future__ import annotations

import json

from studio.annotation.models import JudgeCalibration


def calibrated_judge(
    *, actor=None, cases: int = 12, disagree: bool = False, name: str = ""
) -> JudgeCalibration:
    """The evaluation judge calibrated on ``cases`` labelled world cases; ``disagree`` flips every
    human Accuracy label, so the judge lands below any sensible agreement."""
    from studio.annotation.calibration import calibration_run
    from studio.evolution.datasets import dataset_import
    from studio.evolution.runs import EVAL_JUDGE
    from studio.traffic.testing import world_cases

    rows, catalogue = world_cases(cases)
    if disagree:
        for case in rows:
            for cand in case.get("candidates", []):
                cand["human"]["accuracy"] = 1 - cand["human"]["accuracy"]
    dataset = dataset_import(
        name=name or ("labels-flipped" if disagree else "labels-world"),
        text="\n".join(json.dumps(c) for c in rows),
        source="labelled.jsonl",
        actor=actor,
        catalogue=catalogue.to_dict(),
    )
    return calibration_run(
        judge=EVAL_JUDGE, dataset_id=dataset.pk, actor_id=actor.pk if actor else None
    )
