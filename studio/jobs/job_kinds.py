"""Job kinds of the jobs app itself: the worker check."""

from __future__ import annotations

import platform
import time

import celery

from studio.jobs.registry import JobContext, job_kind


@job_kind("worker_check", label="Worker check")
def worker_check(context: JobContext) -> dict:
    """Proves the worker runs jobs end to end: reports progress for `seconds` seconds."""
    seconds = float(context.params.get("seconds", 5))
    if not 0 < seconds <= 3600:
        raise ValueError(f"seconds: {seconds} must be between 0 and 3600")
    steps = max(1, int(seconds * 2))
    for step in range(1, steps + 1):
        time.sleep(seconds / steps)
        context.progress(round(100 * step / steps), f"step {step}/{steps}")
    return {"python": platform.python_version(), "celery": celery.__version__, "seconds": seconds}
