"""A cancelled evaluation run ends saying so, keeps what it scored, is not resumed behind the user's
back."""

import pytest
from evolution_testing import client_for, small_world

from studio.evolution.models import CaseResult, EvalRun
from studio.evolution.services.runs import eval_run_resume, eval_run_start, eval_runs_resume_stalled
from studio.jobs.models import Job
from studio.jobs.services import job_cancel, job_run

pytestmark = pytest.mark.django_db


def _run(personas, demo_sets_dir, defect_files, tmp_path) -> EvalRun:
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=6, tmp_path=tmp_path
    )
    return eval_run_start(
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=list(dataset.cases.values_list("case_id", flat=True)),
        actor=personas.operator,
    )


def test_a_run_cancelled_before_it_started_is_not_resumed(
    personas, demo_sets_dir, defect_files, tmp_path
):
    run = _run(personas, demo_sets_dir, defect_files, tmp_path)
    job_cancel(job=run.job, actor=personas.operator)
    assert eval_runs_resume_stalled() == []  # a worker restart does not undo the cancel
    run.refresh_from_db()
    assert run.status == EvalRun.FAILED and run.job.status == Job.CANCELLED
    assert (
        "cancelled by olivia" in run.error
        and "0 of 6 case(s) scored and kept: resume to finish" in run.error
    )
    page = client_for(personas.operator).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert "resume to finish" in page and 'id="resume-run"' in page


def test_a_run_cancelled_mid_way_keeps_its_scored_cases_and_resumes(
    personas, demo_sets_dir, defect_files, tmp_path, monkeypatch
):
    run = _run(personas, demo_sets_dir, defect_files, tmp_path)
    from studio.jobs import services

    reports = {"n": 0}
    original = services._Context.progress

    def progress_then_cancel(self, percent, message=None):
        reports["n"] += 1
        if reports["n"] == 3:  # the reviewer presses Cancel while the third case is being reported
            Job.objects.filter(pk=self.job_id).update(
                cancel_requested_at=services.timezone.now(), cancelled_by=personas.operator
            )
        return original(self, percent, message)

    monkeypatch.setattr(services._Context, "progress", progress_then_cancel)
    job = job_run(job_id=run.job_id, heartbeat=False)
    assert job.status == Job.CANCELLED
    run.refresh_from_db()
    assert run.status == EvalRun.FAILED and "3 of 6 case(s) scored and kept" in run.error
    kept = set(CaseResult.objects.filter(run=run).values_list("pk", flat=True))
    monkeypatch.setattr(services._Context, "progress", original)
    eval_run_resume(run=run, actor=personas.operator)
    run.refresh_from_db()
    assert job_run(job_id=run.job_id, heartbeat=False).status == Job.SUCCEEDED
    run.refresh_from_db()
    assert run.status == EvalRun.SUCCEEDED and run.results.count() == 6
    assert kept <= set(
        run.results.values_list("pk", flat=True)
    )  # the first three were not scored again
