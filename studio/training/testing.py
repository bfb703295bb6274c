"""Test helpers of the training app: a refused run form, and waiting for a run's job to end."""

from __future__ import annotations

from html import unescape
from pathlib import Path

from studio.jobs.models import Job
from studio.jobs.testing import wait_for
from studio.training.models import TrainingRun


def assert_form_refused(response, *, field: str, message: str, runs_dir: Path) -> None:
    """A run form answered 400 naming ``field`` with ``message``, and nothing was saved."""
    assert response.status_code == 400
    page = unescape(response.content.decode())
    assert message in page and f'data-field="{field}"' in page, page[:3000]
    assert not TrainingRun.objects.exists() and not Job.objects.exists()
    assert not runs_dir.exists() or not any(runs_dir.iterdir())


def run_ended(run: TrainingRun, *, timeout: float) -> Job:
    """The run's job once it has ended (the run's current job: a resume gives it a new one)."""

    def ended():
        job = Job.objects.get(pk=TrainingRun.objects.get(pk=run.pk).job_id)
        return None if job.is_active else job

    return wait_for(ended, timeout=timeout, what=f"run #{run.pk}'s job to end")
