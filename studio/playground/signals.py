"""A Celery worker process warms the playground's model when it starts (``settings.WARM_UP_WORKER``;
``scripts/demo.sh`` turns it on for the worker that runs playground and evaluation jobs)."""

from __future__ import annotations

import logging
import threading

from celery.signals import worker_process_init

logger = logging.getLogger(__name__)


@worker_process_init.connect
def warm_up_on_process_start(**_kwargs) -> None:
    """In a thread, so the process takes jobs at once (a job that comes first shares the model with
    it); a failure is logged and changes nothing else."""
    from django.conf import settings

    if not settings.WARM_UP_WORKER:
        return
    threading.Thread(target=_warm_up, name="playground-warm-up", daemon=True).start()


def _warm_up() -> None:
    from django.db import connection

    from studio.playground.services import playground_warm_up

    try:
        logger.info("playground warm-up: %s", playground_warm_up())
    except Exception as error:  # noqa: BLE001 - a warm-up is an optimisation, never a failure
        logger.warning("playground warm-up failed: %s: %s", type(error).__name__, error)
    finally:
        connection.close()
