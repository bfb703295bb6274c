"""Judge calibration in the studio: a judge measured against a labelled set version, kept per judge
and set.

The measuring is ``evaluation.calibration.calibrate_judge`` (the same function as
``python -m evaluation calibrate``): this module only builds the judge, reads the set and stores the
report. It runs as a job (an LLM judge over hundreds of replies takes minutes).
"""

from __future__ import annotations

from django.contrib.auth.models import User

from studio.annotation.models import JudgeCalibration
from studio.audit.services import audit_record
from studio.endpoints.models import RoleEndpoint
from studio.evolution.models import Dataset
from studio.jobs.models import Job


class CalibrationError(ValueError):
    """A calibration the studio cannot start; the message names the field."""


STUDIO_JUDGES = (
    "programmatic, llm (the judge role's endpoint, chosen on the Endpoints page), "
    "llm:BASE_URL:MODEL or panel:A|B|C"
)


def studio_judge_model(target: str, *, build: bool = True):
    """An LLM judge's model in the studio (``make_judge``'s ``judge_model``): a bare ``llm`` calls
    the endpoint chosen for the judge role (``studio.endpoints``, with its secret);
    ``llm:BASE_URL:MODEL`` an OpenAI-compatible server without a key, as before. ``build=False``
    checks without loading a local model."""
    from harness.policies import Policy, RoleModel, role_model
    from harness.policies.factory import spec_label
    from harness.policies.openai_chat import KEYLESS
    from studio.endpoints.selectors import role_endpoint
    from studio.endpoints.services import endpoint_role_model

    if target and not target.startswith(("http://", "https://")):
        raise ValueError(
            "in the studio write llm (the judge role's endpoint) or llm:BASE_URL:MODEL"
        )
    endpoint = None if target else role_endpoint(RoleEndpoint.JUDGE)
    if not target and endpoint is None:
        raise ValueError(
            "no endpoint is chosen for the judge role: an ML engineer chooses one on the Endpoints "
            "page, or write llm:BASE_URL:MODEL"
        )
    if not build:  # the spec is valid; the model is built where it runs (the worker)
        return RoleModel(
            role="judge",
            policy=Policy(),
            label=spec_label(endpoint.policy_spec if endpoint else target),
        )
    if endpoint is not None:
        return endpoint_role_model(role="judge", endpoint=endpoint)
    return role_model("judge", target, api_key=KEYLESS)


def judge_check(spec: str) -> str:
    """The judge spec, checked by parsing it as ``evaluation.judges.make_judge`` does, without
    loading a model; CalibrationError if invalid."""
    from evaluation.judges import make_judge
    from harness.livestream import demo_catalogue

    spec = spec.strip()
    if not spec:
        raise CalibrationError(f"judge: name one: {STUDIO_JUDGES}")
    try:
        make_judge(
            spec,
            catalogue=demo_catalogue(),
            judge_model=lambda target: studio_judge_model(target, build=False),
        )
    except ValueError as error:
        raise CalibrationError(f"judge: {error}") from None
    return spec


def labelled_count(dataset: Dataset) -> int:
    """Replies with human labels in the set (what calibration compares the judge with)."""
    return sum(
        1
        for data in dataset.cases.values_list("data", flat=True)
        for cand in data.get("candidates") or []
        if "human" in cand
    )


def calibration_start(*, judge: str, dataset: Dataset, actor: User | None) -> Job:
    from studio.jobs.services import job_create

    judge = judge_check(judge)
    if labelled_count(dataset) == 0:
        raise CalibrationError(
            f"dataset: {dataset.name} has no reply with human labels (candidates[].human); "
            "export a labelled set from an annotation queue"
        )
    audit_record(
        actor=actor,
        action="annotation.calibration.start",
        target=f"judge {judge}",
        data={"dataset": dataset.name},
    )
    return job_create(
        kind="judge_calibration",
        title=f"Calibrate {judge} on {dataset.name}",
        params={"judge": judge, "dataset_id": dataset.pk},
        created_by=actor,
    )


def calibration_run(
    *, judge: str, dataset_id: int, actor_id: int | None = None
) -> JudgeCalibration:
    """Measure ``judge`` against the set's labelled replies and store the result."""
    from evaluation.calibration import calibrate_judge
    from evaluation.judges import make_judge
    from studio.evolution.rows import catalogue_for

    dataset = Dataset.objects.get(pk=dataset_id)
    cases = [row.data for row in dataset.cases.order_by("position")]
    report = calibrate_judge(
        cases=cases,
        judge=make_judge(judge, catalogue=catalogue_for(dataset), judge_model=studio_judge_model),
    )
    acc, eff = report["accuracy"], report["effectiveness"]
    return JudgeCalibration.objects.create(
        judge=judge,
        dataset=dataset,
        n=report["n"],
        accuracy_agreement=acc["agreement"],
        accuracy_kappa=acc["kappa"],
        effectiveness_agreement=eff["agreement"],
        effectiveness_kappa=eff["kappa"],
        report=report,
        created_by_id=actor_id,
    )
