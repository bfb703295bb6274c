"""A worker killed mid-run: the restarted worker resumes the run and scores only the unfinished
cases."""

import os
import signal
import time

import pytest
from evolution_testing import client_for, small_world

from studio.evolution.models import CaseResult, EvalRun
from studio.evolution.services.runs import eval_run_start
from studio.jobs.models import Job
from studio.jobs.testing import celery_worker, wait_for


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_restarted_worker_finishes_the_run_without_rescoring(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    settings.JOB_LEASE_S = 2
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir,
        files=defect_files,
        actor=personas.admin,
        size=16,
        tmp_path=tmp_path,
        delay_s=0.15,
    )
    with celery_worker(lease_s=2) as worker:
        run = eval_run_start(
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            case_ids=list(dataset.cases.values_list("case_id", flat=True)),
            actor=personas.operator,
        )
        wait_for(
            lambda: CaseResult.objects.filter(run=run).count() >= 4,
            timeout=60,
            what="4 scored cases",
            interval=0.2,
        )
        os.kill(worker.pid, signal.SIGKILL)
        worker.process.wait(timeout=10)
        first_job = Job.objects.get(pk=EvalRun.objects.get(pk=run.pk).job_id)
        kept = {r.case_id: (r.pk, r.created_at) for r in CaseResult.objects.filter(run=run)}
        assert 4 <= len(kept) < 16
        assert EvalRun.objects.get(pk=run.pk).status == EvalRun.RUNNING  # nobody has noticed yet
        time.sleep(2.5)  # the lost worker's lease runs out
    with celery_worker(lease_s=2):  # on start it reaps the lost job and resumes the run
        run = wait_for(
            lambda: EvalRun.objects.filter(pk=run.pk, status=EvalRun.SUCCEEDED).first(),
            timeout=90,
            what="the resumed run to finish",
            interval=0.2,
        )
    first_job.refresh_from_db()
    assert first_job.status == Job.FAILED and "worker lost" in first_job.error
    assert run.job_id != first_job.pk and run.attempts == 2
    results = CaseResult.objects.filter(run=run)
    assert results.count() == 16 and sorted(results.values_list("case_id", flat=True)) == sorted(
        run.case_ids
    )
    for case_id, (pk, created_at) in kept.items():  # finished cases were kept, not scored again
        row = results.get(case_id=case_id)
        assert (row.pk, row.created_at, row.attempt) == (pk, created_at, 1)
    assert results.filter(attempt=2).count() == 16 - len(kept) == run.scored_by_attempt["2"]
    page = client_for(personas.operator).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert 'data-status="succeeded"' in page and "attempt 2" in page
