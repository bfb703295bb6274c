"""Writes of the compatibility matrix: the set as a dataset, cells, which endpoint serves a label,
the triggers.

A cell is an evaluation run of the evolution app (``studio.evolution.services.runs.eval_run_start``:
a Celery job whose chunks any worker claims) of one endpoint on one Harness version over the
compatibility set. A request for a cell whose model fingerprint, version digest and set version
already have one returns that cell (a run that stopped is resumed, keeping what it scored): a cell
is never computed twice.

Cells are asked for by a person (``cell_request``), and automatically:

- when a Harness version gets a label (``cells_for_label``, a job queued by the move): the endpoints
  serving the Harness's production and staging labels on that version, with the production pair
  itself (the reference every cell is coloured against) and the production model on the version it
  was trained on (what the retrain alarm compares with);
- when a checkpoint enters the registry (``cells_for_checkpoint``, in a job of its own after its
  training run): its endpoint (made as the registry's "make an endpoint" does) on the production
  and staging versions of the Harness it was trained on; none for a smoke run of the tiny test
  model (``why_no_follow_on_cells``), whose cells a person asks for if they want them.

The cells asked for automatically are *follow-ons* (``Cell.automatic``): their evaluation runs are
automatic jobs on the follow-on queue (``studio.jobs.registry.job_queue``), queued on behalf of the
person whose label move or training run caused them, who may cancel them, and counted against that
person's follow-on budget (``JOB_FOLLOW_ON_QUOTA_PER_USER``): past it a cell is not queued and the
job that asked says so. A follow-on request never resumes a cell whose run someone cancelled.

The set itself is found by id (``models.SetDataset``), never by its dataset's name.
"""

from __future__ import annotations

import contextlib
import logging

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction

from studio.accounts.roles import user_can
from studio.audit.services import audit_record
from studio.compatibility import selectors
from studio.compatibility.models import Cell, LabelServer, SetDataset
from studio.endpoints.models import ModelEndpoint
from studio.evolution.errors import EvolutionError
from studio.evolution.models import Dataset, EvalRun
from studio.harnesses.models import Harness, HarnessVersion, Label

logger = logging.getLogger(__name__)


class CompatibilityError(ValueError):
    """A cell cannot be asked for; the message names the field and what is valid."""


class NoCompatibilitySet(CompatibilityError):
    """The dataset the compatibility set is drawn from is not imported."""


def compat_dataset_ensure() -> tuple[selectors.CompatSet, Dataset]:
    """The current compatibility set, imported as a dataset named after its version (once)."""
    from evaluation.cases import dumps_case
    from studio.evolution.services.datasets import dataset_import

    current = selectors.compat_set()
    if current is None:
        raise NoCompatibilitySet(
            f"no compatibility set: the dataset {settings.COMPATIBILITY_SOURCE_DATASET} "
            "it is drawn from is not imported (manage.py seed_evolution_demo imports it)"
        )
    dataset = current.dataset
    if dataset is None:
        name = current.name
        if Dataset.objects.filter(name=name).exists():  # someone imported a dataset of that name
            import secrets

            name = f"{name}-{secrets.token_hex(4)}"
        try:
            with transaction.atomic():
                dataset = dataset_import(
                    name=name,
                    text="\n".join(dumps_case(c) for c in current.cases),
                    source=f"evaluation.compatibility.build_set({current.source.name})",
                    actor=None,
                    catalogue=current.source.catalogue,
                    heldout_share=0.0,
                    description=f"Compatibility set {current.version}: drawn "
                    f"from {current.source.name}, each case "
                    "also under one HSA variant of the evaluated version",
                )
                SetDataset.objects.create(set_version=current.version, dataset=dataset)
        except (EvolutionError, IntegrityError):  # another process imported it at the same moment
            dataset = current.dataset
            if dataset is None:
                raise
    return current, dataset


def cell_request(
    *,
    endpoint: ModelEndpoint,
    version: HarnessVersion,
    actor: User | None,
    reason: str,
    on_behalf_of: User | None = None,
) -> Cell:
    """The cell of ``endpoint`` on ``version`` on the current set: the one that exists, or a new
    run.

    ``actor``: the person asking (their own evaluation: a job of theirs on the default queue, in
    their quota). ``actor`` None: a follow-on the studio asks for itself, on behalf of
    ``on_behalf_of`` (the person whose action caused it, or nobody): an automatic job on the
    follow-on queue, in that person's follow-on budget (JobQuotaExceeded past it)."""
    follow_on = actor is None
    if actor is not None and not user_can(actor, "compatibility.request"):
        raise PermissionDenied(
            "asking for a compatibility cell needs the operator or ML engineer role"
        )
    current, dataset = compat_dataset_ensure()
    try:
        fingerprint = selectors.model_fingerprint(endpoint=endpoint)
    except ValueError as error:
        raise CompatibilityError(f"endpoint: {error}") from None
    existing = selectors.cell_find(
        endpoint=endpoint, version=version, set_version=current.version, fingerprint=fingerprint
    )
    if existing is not None:
        return _resume_if_stopped(existing, actor=actor)
    from studio.evolution.services.runs import eval_run_start
    from studio.jobs.services import job_quota_check

    if follow_on and on_behalf_of is not None:
        job_quota_check(user=on_behalf_of, automatic=True)
    try:
        with transaction.atomic():
            run = eval_run_start(
                version=version,
                dataset=dataset,
                endpoint=endpoint,
                case_ids=[c["id"] for c in current.cases],
                actor=actor,
            )
            cell = Cell.objects.create(
                model_fingerprint=fingerprint,
                endpoint=endpoint,
                version=version,
                version_digest=version.digest,
                set_version=current.version,
                dataset=dataset,
                run=run,
                reason=reason[:300],
                requested_by=actor or on_behalf_of,
                automatic=follow_on,
            )
            follow_on_job_adopt(cell=cell)
    except IntegrityError:  # the same cell was asked for at the same moment: that one counts
        return selectors.cell_find(
            endpoint=endpoint, version=version, set_version=current.version, fingerprint=fingerprint
        )
    audit_record(
        actor=actor,
        action="compatibility.cell",
        harness=version.harness,
        target=f"cell #{cell.pk}",
        data={
            "endpoint": endpoint.name,
            "version": version.number,
            "set": current.version,
            "run": run.pk,
            "reason": reason[:300],
        },
    )
    return cell


def follow_on_job_adopt(*, cell: Cell, job=None) -> None:
    """A follow-on cell's run job (``job``, default its run's current one: the first, or one queued
    to resume it) is automatic and belongs to the person the cell was queued on behalf of: it goes
    to the follow-on queue, counts in their follow-on budget, and they may cancel it. Called before
    the job is handed to Celery (that happens when the transaction commits)."""
    from studio.jobs.models import Job

    job_id = job.pk if job is not None else cell.run.job_id
    if not cell.automatic or job_id is None:
        return
    Job.objects.filter(pk=job_id, status=Job.QUEUED).update(
        automatic=True, created_by=cell.requested_by
    )
    if job is not None:
        job.automatic, job.created_by_id = True, cell.requested_by_id
    if cell.requested_by_id is not None:
        EvalRun.objects.filter(pk=cell.run_id, created_by__isnull=True).update(
            created_by=cell.requested_by
        )


def _resume_if_stopped(cell: Cell, *, actor: User | None) -> Cell:
    from studio.evolution.services.runs import EvaluationError, eval_run_is_stalled, eval_run_resume

    run = cell.run
    if actor is None and run.badge == "cancelled":
        return cell  # someone cancelled it: only a person's own request runs it again
    if run.status == EvalRun.FAILED or eval_run_is_stalled(run=run):
        with contextlib.suppress(EvaluationError):  # already queued again by someone else
            eval_run_resume(run=run, actor=actor)
    return cell


def label_server_set(
    *, harness: Harness, label: str, endpoint: ModelEndpoint | None, actor: User | None
) -> None:
    """Name the endpoint serving ``harness``'s ``label`` (None: no longer named); then fill its
    cells. ``actor`` None: the deployment's own command (``manage.py compatibility_fill``)."""
    if actor is not None and not user_can(actor, "endpoint.manage"):
        raise PermissionDenied("naming the endpoint that serves a label needs the ML engineer role")
    label = label.strip().lower()
    if label not in selectors.SERVED_LABELS:
        raise CompatibilityError(
            f"label: one of {', '.join(selectors.SERVED_LABELS)}, not {label!r}"
        )
    if endpoint is None:
        LabelServer.objects.filter(harness=harness, label=label).delete()
    else:
        LabelServer.objects.update_or_create(
            harness=harness, label=label, defaults={"endpoint": endpoint, "updated_by": actor}
        )
    audit_record(
        actor=actor,
        action="compatibility.server",
        harness=harness,
        target=f"{harness.name}@{label}",
        data={"endpoint": endpoint.name if endpoint else None},
    )
    if endpoint is not None and label in selectors.labelled_versions(harness=harness):
        from studio.jobs.services import job_create

        job_create(  # a follow-on of naming the server, on the namer's behalf
            kind="compatibility_fill",
            title=f"Compatibility cells for {harness.name}@{label}",
            params={"harness_id": harness.pk, "label": label},
            created_by=actor,
            automatic=True,
        )


def _quietly(what: str, request, *, log=None) -> Cell | None:
    """An automatic request: a problem (no set, an unreadable model, the follow-on budget spent) is
    logged, and said in ``log`` (the asking job's log), never raised into the label move or the
    training run that triggered it; the matrix shows the missing cell and offers to ask for it."""
    from studio.jobs.services import JobQuotaExceeded

    try:
        return request()
    except (CompatibilityError, ValueError, JobQuotaExceeded) as error:
        logger.warning("compatibility: %s not asked for: %s", what, error)
        if log is not None:
            log(f"{what}: not asked for: {error}")
        return None


def cells_for_label(
    *, harness_id: int, label: str, on_behalf_of: User | None = None, log=None
) -> list[Cell]:
    """The cells a label move needs (see the module docstring), follow-ons on behalf of
    ``on_behalf_of`` (who moved the label). Returns them; ``log`` hears of those not asked for."""
    harness = Harness.objects.get(pk=harness_id)
    versions = selectors.labelled_versions(harness=harness)
    moved = versions.get(label)
    if moved is None:
        return []
    servers = selectors.label_servers(harness=harness)
    pair = selectors.production_pair(harness=harness)
    wanted: list[tuple[ModelEndpoint, HarnessVersion, str]] = []
    for served, endpoint in sorted(servers.items()):
        wanted.append(
            (
                endpoint,
                moved,
                f"{harness.name}@{label} -> v{moved.number} ({endpoint.name} serves {served})",
            )
        )
    if pair.endpoint is not None and pair.version is not None:
        wanted.append((pair.endpoint, pair.version, "the production pair (the matrix's reference)"))
        _, trained_on = selectors.endpoint_training_run(endpoint=pair.endpoint, harness=harness)
        if trained_on is not None and trained_on.harness_id == harness.pk:
            wanted.append(
                (pair.endpoint, trained_on, "the production model on the version it was trained on")
            )
    cells = []
    for endpoint, version, reason in wanted:
        cell = _quietly(
            f"{endpoint.name} on v{version.number}",
            lambda e=endpoint, v=version, r=reason: cell_request(
                endpoint=e, version=v, actor=None, reason=r, on_behalf_of=on_behalf_of
            ),
            log=log,
        )
        if cell is not None and cell not in cells:
            cells.append(cell)
    return cells


def why_no_follow_on_cells(*, run) -> str:
    """Why a finished training run's checkpoint gets no follow-on cells ('' when it does): a smoke
    run of the tiny random test model (its scores mean nothing: 120 cases per cell would only hold
    the workers), or a run trained on no Harness version (no Harness to measure it on). A person
    asks for such a cell on /compatibility/ when they want it."""
    if run.model == "tiny" or run.preset.startswith("tiny"):
        return (
            f"run #{run.pk} is a smoke run of the tiny test model: its compatibility cells are not "
            "asked for automatically (make an endpoint of it and ask for a cell on "
            "/compatibility/ if you want one)"
        )
    if run.harness_version_id is None:
        return (
            f"run #{run.pk} names no Harness version it was trained on: no compatibility cell is "
            "asked for automatically (ask for one on /compatibility/)"
        )
    return ""


def cells_for_checkpoint(*, run_id: int, log=None) -> list[Cell]:
    """A policy checkpoint entered the registry: its endpoint on the production and staging versions
    of the Harness it was trained on (``why_no_follow_on_cells``: none for a smoke run), follow-ons
    on behalf of whoever started the run."""
    from studio.training.models import TrainingRun
    from studio.training.services import RunRefused, checkpoint_endpoint_create

    run = TrainingRun.objects.select_related("created_by", "harness_version").get(pk=run_id)
    unwanted = why_no_follow_on_cells(run=run)
    if unwanted:
        if log is not None:
            log(unwanted)
        return []
    labels = list(
        Label.objects.filter(
            name__in=selectors.SERVED_LABELS, harness_id=run.harness_version.harness_id
        ).select_related("version", "harness")
    )
    if not labels or selectors.compat_set() is None:
        return []  # nothing to evaluate it on (yet): the matrix offers its cells once there is
    try:
        endpoint = checkpoint_endpoint_create(run=run, actor=run.created_by)
    except RunRefused as refused:
        logger.info("compatibility: run #%s gives no checkpoint to evaluate: %s", run_id, refused)
        return []
    cells = []
    for label in labels:
        cell = _quietly(
            f"{endpoint.name} on {label.harness.name}@{label.name}",
            lambda v=label.version, n=label.name: cell_request(
                endpoint=endpoint,
                version=v,
                actor=None,
                reason=f"checkpoint of run #{run.pk} entered the registry ({v.harness.name}@{n})",
                on_behalf_of=run.created_by,
            ),
            log=log,
        )
        if cell is not None and cell not in cells:
            cells.append(cell)
    return cells


def cell_figures_store(*, run_id: int) -> None:
    """A cell's run scored its cases (``studio.evolution.signals.eval_run_scored``): its figures
    are kept on the row, so the matrix and the gate read them without scoring the rows again."""
    from evaluation.compatibility import cell_figures as figures_of

    for cell in Cell.objects.select_related("run").filter(run_id=run_id):
        cell.figures = figures_of(selectors.cell_rows(cell=cell))
        cell.save(update_fields=["figures"])
