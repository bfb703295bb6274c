"""A label move queues a job that asks for the cells it needs (``job_kinds.compatibility_fill_job``), when the
Harness has an endpoint named as serving one of its labels (otherwise no cell is wanted)."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from studio.harnesses.models import Label


@receiver(post_save, sender=Label, dispatch_uid="compatibility_label_moved")
def label_moved(sender, instance: Label, **_kwargs) -> None:
    from django.conf import settings

    from studio.compatibility.models import LabelServer
    from studio.jobs.services import job_create

    if not settings.FOLLOW_ON_JOBS or not LabelServer.objects.filter(harness_id=instance.harness_id).exists():
        return
    job_create(kind="compatibility_fill", title=f"Compatibility cells for {instance.harness.name}@{instance.name}",
               params={"harness_id": instance.harness_id, "label": instance.name}, created_by=instance.updated_by,
               automatic=True)
