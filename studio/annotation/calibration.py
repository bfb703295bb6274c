"""Judge calibration in the studio: a judge measured against a set people labelled, kept per judge
and set.

The measuring is ``evaluation.calibration.calibrate_parts`` (the same function as
``python -m evaluation calibrate`` on a calibration file): this module only checks what may be
calibrated, builds the judge, reads the set's calibration file and stores the report. It runs as a
job (an LLM judge over hundreds of replies takes minutes).

What may be calibrated (docs/studio.md, "Calibrate the judge"): a *label set* only (an export of an
annotation queue, or the committed human set ``settings.JUDGE_CALIBRATION_FILE``), never an
imported or generated dataset; a sample that can decide (``CALIBRATION_MIN_REPLIES`` labelled
replies, every category); a judge chosen from ``judge_choices`` (the programmatic judge, or the
endpoint the registry holds for the judge role), never a URL typed in a form.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from studio.annotation.models import JudgeCalibration, LabelSet
from studio.audit.services import audit_record
from studio.endpoints.models import RoleEndpoint
from studio.evolution.models import Dataset
from studio.jobs.models import Job


class CalibrationError(ValueError):
    """A calibration the studio cannot start; the message names the field."""


STUDIO_JUDGES = (
    "programmatic, llm (the judge role's endpoint, chosen on the Endpoints page) or panel:A|B|C of "
    "those"
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

    if target:
        raise ValueError(
            "in the studio write llm (the judge role's endpoint, chosen by an ML engineer on the "
            "Endpoints page); an address typed into a form is not called"
        )
    endpoint = role_endpoint(role=RoleEndpoint.JUDGE)
    if endpoint is None:
        raise ValueError(
            "no endpoint is chosen for the judge role: an ML engineer chooses one on the Endpoints "
            "page"
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


def judge_choices() -> list[tuple[str, str]]:
    """The judges a calibration may measure: the programmatic judge, and the LLM judge of the
    endpoint the registry holds for the judge role (when one is chosen)."""
    from studio.endpoints.selectors import role_endpoint

    choices = [("programmatic", "programmatic (the judge evaluation runs score with)")]
    endpoint = role_endpoint(role=RoleEndpoint.JUDGE)
    if endpoint is not None:
        choices.append(("llm", f"llm: endpoint {endpoint.name} (the judge role's endpoint)"))
    return choices


def committed_file() -> Path:
    return Path(settings.JUDGE_CALIBRATION_FILE)


def committed_label_set(*, actor: User | None = None) -> LabelSet | None:
    """The committed human set as a label set (read into the studio on first use), or None when
    the file is not there."""
    from studio.annotation.services import label_set_load

    path = committed_file()
    if not path.is_file():
        return None
    return label_set_load(path=path, actor=actor)


COMMITTED = "committed"


def label_set_for(name: str, *, actor: User | None = None) -> LabelSet:
    """The label set the form names: ``committed`` (the committed human set) or a dataset name,
    which must be an export of an annotation queue."""
    from evaluation.calibration import CalibrationFileError
    from evaluation.cases import CaseFileError
    from studio.evolution.errors import EvolutionError

    if name == COMMITTED:
        try:
            found = committed_label_set(actor=actor)
        except (CalibrationFileError, CaseFileError, EvolutionError) as error:
            raise CalibrationError(f"dataset: the committed human set: {error}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise CalibrationError(
                f"dataset: the committed human set {settings.JUDGE_CALIBRATION_FILE} cannot be "
                f"read ({type(error).__name__})"
            ) from None
        if found is None:
            raise CalibrationError(
                f"dataset: no committed human set at {settings.JUDGE_CALIBRATION_FILE}; export a "
                "labelled set from an annotation queue (manage.py annotation_export) and commit it"
            )
        return found
    dataset = Dataset.objects.filter(name=name).first()
    if dataset is None:
        raise CalibrationError(f"dataset: no dataset named {name!r}")
    label_set = LabelSet.objects.filter(dataset=dataset).first()
    if label_set is None:
        raise CalibrationError(
            f"dataset: {dataset.name} was not labelled by people in an annotation queue (an "
            "imported or generated set, such as the dev-set, carries labels nobody is answerable "
            "for); choose the committed human set or a set exported from a queue"
        )
    return label_set


def calibration_start(*, judge: str, dataset: str, actor: User | None) -> Job:
    from evaluation.calibration import parse_calibration_text, sample_problems
    from studio.jobs.services import job_create

    allowed = dict(judge_choices())
    if judge not in allowed:
        raise CalibrationError(
            f"judge: one of {', '.join(allowed)} ({'; '.join(allowed.values())}); got {judge!r}. "
            "An LLM judge is the judge role's endpoint, chosen on the Endpoints page"
        )
    label_set = label_set_for(dataset, actor=actor)
    cases = parse_calibration_text(label_set.content, source=label_set.dataset.name).cases()
    problems = sample_problems(cases, min_replies=settings.CALIBRATION_MIN_REPLIES)
    if problems:
        raise CalibrationError(
            f"dataset: {label_set.dataset.name} cannot decide a calibration: {'; '.join(problems)}"
        )
    audit_record(
        actor=actor,
        action="annotation.calibration.start",
        target=f"judge {judge}",
        data={"dataset": label_set.dataset.name, "label_set": label_set.pk},
    )
    return job_create(
        kind="judge_calibration",
        title=f"Calibrate {judge} on {label_set.dataset.name}",
        params={"judge": judge, "dataset_id": label_set.dataset_id},
        created_by=actor,
    )


def calibration_run(
    *, judge: str, dataset_id: int, actor_id: int | None = None
) -> JudgeCalibration:
    """Measure ``judge`` against the label set's replies, per part, and store the result (the
    held-out part's figures in the row)."""
    from evaluation.calibration import calibrate_parts, parse_calibration_text
    from evaluation.judges import make_judge

    label_set = LabelSet.objects.select_related("dataset").filter(dataset_id=dataset_id).first()
    if label_set is None:  # a job queued before label sets existed
        raise ValueError("dataset: not a set people labelled in an annotation queue")
    calibration = parse_calibration_text(label_set.content, source=label_set.dataset.name)
    report = calibrate_parts(
        calibration=calibration,
        judge=make_judge(judge, catalogue=calibration.catalogue, judge_model=studio_judge_model),
    )
    figures = report["parts"].get("heldout") or report["all"]
    acc, eff = figures["accuracy"], figures["effectiveness"]
    return JudgeCalibration.objects.create(
        judge=judge,
        dataset=label_set.dataset,
        label_set=label_set,
        n=figures["n"],
        accuracy_agreement=acc["agreement"],
        accuracy_kappa=acc["kappa"],
        effectiveness_agreement=eff["agreement"],
        effectiveness_kappa=eff["kappa"],
        report=report,
        created_by_id=actor_id,
    )


@transaction.atomic
def calibration_retire(*, calibration: JudgeCalibration, actor: User) -> JudgeCalibration:
    """An admin retires a calibration: the gates read the judge's next newest one (or none)."""
    if calibration.retired_at is not None:
        raise CalibrationError(f"calibration: #{calibration.pk} is retired already")
    calibration.retired_at, calibration.retired_by = timezone.now(), actor
    calibration.save(update_fields=["retired_at", "retired_by"])
    audit_record(
        actor=actor,
        action="annotation.calibration.retire",
        target=f"calibration #{calibration.pk}",
        data={"judge": calibration.judge, "dataset": calibration.dataset.name},
    )
    return calibration
