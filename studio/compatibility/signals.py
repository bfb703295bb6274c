"""A label move fills the cells it needs once it commits (``services.cells_for_label``)."""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.signals import post_save
from django.dispatch import receiver

from studio.harnesses.models import Label

logger = logging.getLogger(__name__)


@receiver(post_save, sender=Label, dispatch_uid="compatibility_label_moved")
def label_moved(sender, instance: Label, **_kwargs) -> None:
    from studio.compatibility.services import cells_for_label

    harness_id, name = instance.harness_id, instance.name

    def fill() -> None:
        try:
            cells_for_label(harness_id=harness_id, label=name)
        except Exception:  # the move is committed: a bug here must not turn it into an error page
            logger.exception("compatibility: the cells for %s@%s could not be asked for", harness_id, name)

    transaction.on_commit(fill)
