"""The jobs app's receivers of Celery's worker signals, which keep job rows truthful across worker
restarts (its own signal, ``job_cancelled``, is defined in ``studio.jobs.signals``)."""

from __future__ import annotations

import logging
import sys

from celery.signals import (
    worker_process_shutdown,
    worker_ready,
    worker_shutdown,
    worker_shutting_down,
)

logger = logging.getLogger(__name__)


@worker_ready.connect
def reap_on_worker_start(**_kwargs) -> None:
    """A (re)started worker fails the jobs whose worker died without a word."""
    from studio.jobs.services import job_reap_stale

    reaped = job_reap_stale()
    if reaped:
        logger.warning("marked %d job(s) failed whose worker stopped sending heartbeats", reaped)


@worker_shutting_down.connect
def fail_on_shutdown(sender=None, sig=None, how=None, **_kwargs) -> None:
    """A cold shutdown abandons running jobs: say so instead of leaving them running."""
    if how != "Cold":
        return  # a warm shutdown lets the running job finish
    from studio.jobs.services import job_fail_for_worker

    job_fail_for_worker(
        node=str(sender), reason=f"the worker shut down ({sig}) while the job was running"
    )


@worker_shutdown.connect
@worker_process_shutdown.connect
def stop_llama_calls(**_kwargs) -> None:
    """A worker process that ran the llama.cpp route stops its calls and joins their threads before
    it exits (a call cut at its budget is still inside llama.cpp for up to a prefill batch, and a
    process that exits then aborts). ``worker_shutdown``: the worker's main process (the solo pool);
    ``worker_process_shutdown``: a prefork child, which ends with ``os._exit`` and never runs the
    interpreter's exit handlers."""
    llama = sys.modules.get("serving.llama_cpp")  # loaded only where a job used the route
    if llama is not None:
        llama.close_all()
