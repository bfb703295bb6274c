"""The compatibility matrix's reactions to other apps' events: a label move queues a job that asks
for the cells it needs (``job_kinds.compatibility_fill_job``), when the Harness has an endpoint
named as serving one of its labels (otherwise no cell is wanted); a scored evaluation run that is a
cell's keeps the cell's figures; a checkpoint entering the registry asks for its cells
(``studio.training.signals.checkpoint_registered``)."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from studio.evolution.runs import eval_run_scored
from studio.harnesses.models import Label
from studio.training.signals import checkpoint_registered


@receiver(post_save, sender=Label, dispatch_uid="compatibility_label_moved")
def label_moved(sender, instance: Label, **_kwargs) -> None:
    from django.conf import settings

    from studio.compatibility.models import LabelServer
    from studio.jobs.services import job_create

    if (
        not settings.FOLLOW_ON_JOBS
        or not LabelServer.objects.filter(harness_id=instance.harness_id).exists()
    ):
        return
    job_create(
        kind="compatibility_fill",
        title=f"Compatibility cells for {instance.harness.name}@{instance.name}",
        params={"harness_id": instance.harness_id, "label": instance.name},
        created_by=instance.updated_by,
        automatic=True,
    )


@receiver(eval_run_scored, dispatch_uid="compatibility_cell_scored")
def cell_scored(*, run_id: int, **_signal) -> None:
    from studio.compatibility.services import cell_figures_store

    cell_figures_store(run_id=run_id)


@receiver(checkpoint_registered, dispatch_uid="compatibility_checkpoint_registered")
def checkpoint_entered_registry(*, run, **_signal):
    """Its cells on the production and staging versions, a job of their own (automatic: outside the
    quota, never ahead of a person's queued job; ``job_kinds``)."""
    from studio.jobs.services import job_create

    job = job_create(
        kind="compatibility_checkpoint",
        title=f"Compatibility cells of run #{run.pk}",
        params={"run_id": run.pk},
        created_by=run.created_by,
        automatic=True,
    )
    return job, f"compatibility: its cells are asked for in job #{job.pk}, a step of their own"
