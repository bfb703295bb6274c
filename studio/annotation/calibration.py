"""Judge calibration in the studio: a judge measured against a labelled set version, kept per judge and set.

The measuring is ``evaluation.calibration.calibrate_judge`` (the same function as
``python -m evaluation calibrate``): this module only builds the judge, reads the set and stores the
report. It runs as a job (an LLM judge over hundreds of replies takes minutes).
"""

from __future__ import annotations

from django.contrib.auth.models import User

from studio.annotation.models import JudgeCalibration
from studio.audit.services import audit_record
from studio.evolution.models import Dataset
from studio.jobs.models import Job


class CalibrationError(ValueError):
    """A calibration the studio cannot start; the message names the field."""


def judge_check(spec: str) -> str:
    """The judge spec, checked by building it (``evaluation.judges.make_judge``); CalibrationError if invalid."""
    from evaluation.judges import make_judge
    from harness.livestream import demo_catalogue

    spec = spec.strip()
    if not spec:
        raise CalibrationError("judge: name one: programmatic, llm:BASE_URL:MODEL or panel:A|B|C")
    try:
        make_judge(spec, catalogue=demo_catalogue())
    except ValueError as error:
        raise CalibrationError(f"judge: {error}") from None
    return spec


def labelled_count(dataset: Dataset) -> int:
    """Replies with human labels in the set (what calibration compares the judge with)."""
    return sum(1 for data in dataset.cases.values_list("data", flat=True)
               for cand in data.get("candidates") or [] if "human" in cand)


def calibration_start(*, judge: str, dataset: Dataset, actor: User | None) -> Job:
    from studio.jobs.services import job_create

    judge = judge_check(judge)
    if labelled_count(dataset) == 0:
        raise CalibrationError(f"dataset: {dataset.name} has no reply with human labels (candidates[].human); "
                               "export a labelled set from an annotation queue")
    audit_record(actor=actor, action="annotation.calibration.start", target=f"judge {judge}",
                 data={"dataset": dataset.name})
    return job_create(kind="judge_calibration", title=f"Calibrate {judge} on {dataset.name}",
                      params={"judge": judge, "dataset_id": dataset.pk}, created_by=actor)


def calibration_run(*, judge: str, dataset_id: int, actor_id: int | None = None) -> JudgeCalibration:
    """Measure ``judge`` against the set's labelled replies and store the result."""
    from evaluation.calibration import calibrate_judge
    from evaluation.judges import make_judge
    from studio.evolution.rows import catalogue_for

    dataset = Dataset.objects.get(pk=dataset_id)
    cases = [row.data for row in dataset.cases.order_by("position")]
    report = calibrate_judge(cases=cases, judge=make_judge(judge, catalogue=catalogue_for(dataset)))
    acc, eff = report["accuracy"], report["effectiveness"]
    return JudgeCalibration.objects.create(
        judge=judge, dataset=dataset, n=report["n"], accuracy_agreement=acc["agreement"],
        accuracy_kappa=acc["kappa"], effectiveness_agreement=eff["agreement"], effectiveness_kappa=eff["kappa"],
        report=report, created_by_id=actor_id)
