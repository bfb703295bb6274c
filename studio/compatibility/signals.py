"""The compatibility matrix's reactions to other apps' events: a label move queues a job that asks
for the cells it needs (``job_kinds.compatibility_fill_job``), when the Harness has an endpoint
named as serving one of its labels (otherwise no cell is wanted); a scored evaluation run that is a
cell's keeps the cell's figures; a checkpoint entering the registry asks for its cells
(``studio.training.signals.checkpoint_registered``); a job queued to resume a follow-on cell's run
stays a follow-on of the same person (``services.follow_on_job_adopt``).

Every job queued here is a follow-on (``automatic``) on behalf of the person whose action caused it:
on the follow-on queue, in their follow-on budget, cancellable by them. Past the budget nothing is
queued, and the label move or the training run goes on; the log says why."""

from __future__ import annotations

import logging

from django.db.models.signals import post_save
from django.dispatch import receiver

from studio.evolution.signals import eval_run_scored
from studio.harnesses.models import Label
from studio.jobs.models import Job
from studio.training.signals import checkpoint_registered

logger = logging.getLogger(__name__)


@receiver(post_save, sender=Label, dispatch_uid="compatibility_label_moved")
def label_moved(sender, instance: Label, **_kwargs) -> None:
    from django.conf import settings

    from studio.compatibility.models import LabelServer
    from studio.jobs.services import JobQuotaExceeded, job_create

    if (
        not settings.FOLLOW_ON_JOBS
        or not LabelServer.objects.filter(harness_id=instance.harness_id).exists()
    ):
        return
    try:
        job_create(
            kind="compatibility_fill",
            title=f"Compatibility cells for {instance.harness.name}@{instance.name}",
            params={"harness_id": instance.harness_id, "label": instance.name},
            created_by=instance.updated_by,
            automatic=True,
        )
    except JobQuotaExceeded as spent:  # the label moves; its cells can be asked for on the matrix
        logger.warning(
            "compatibility: the cells of %s@%s are not asked for: %s",
            instance.harness.name,
            instance.name,
            spent,
        )


@receiver(eval_run_scored, dispatch_uid="compatibility_cell_scored")
def cell_scored(*, run_id: int, **_signal) -> None:
    from studio.compatibility.services import cell_figures_store

    cell_figures_store(run_id=run_id)


@receiver(checkpoint_registered, dispatch_uid="compatibility_checkpoint_registered")
def checkpoint_entered_registry(*, run, **_signal):
    """Its cells on the production and staging versions of the Harness it was trained on, a job of
    its own (a follow-on of the run's starter: their follow-on budget, the follow-on queue, never
    ahead of a person's queued job; ``job_kinds``). None for a smoke run
    (``services.why_no_follow_on_cells``): the sentence says so."""
    from studio.compatibility.services import why_no_follow_on_cells
    from studio.jobs.services import JobQuotaExceeded, job_create

    unwanted = why_no_follow_on_cells(run=run)
    if unwanted:
        return None, f"compatibility: {unwanted}"
    try:
        job = job_create(
            kind="compatibility_checkpoint",
            title=f"Compatibility cells of run #{run.pk}",
            params={"run_id": run.pk},
            created_by=run.created_by,
            automatic=True,
        )
    except JobQuotaExceeded as spent:
        return None, f"compatibility: its cells are not asked for: {spent}"
    return job, f"compatibility: its cells are asked for in job #{job.pk}, a step of their own"


@receiver(post_save, sender=Job, dispatch_uid="compatibility_follow_on_resumed")
def follow_on_resumed(sender, instance: Job, created: bool, **_kwargs) -> None:
    """A job queued to resume a follow-on cell's evaluation run (beat, a worker noticing the lost
    one) is the same follow-on: automatic, on behalf of the same person."""
    if (
        not created
        or instance.kind != "evolution_eval_run"
        or instance.automatic
        or instance.created_by_id is not None  # a person resuming it: their own job
    ):
        return
    from studio.compatibility.models import Cell
    from studio.compatibility.services import follow_on_job_adopt

    run_id = (instance.params or {}).get("run_id")
    cell = Cell.objects.filter(run_id=run_id, automatic=True).first()
    if cell is not None:
        follow_on_job_adopt(cell=cell, job=instance)
