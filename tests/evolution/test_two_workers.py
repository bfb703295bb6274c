"""One evaluation over two real Celery workers; one is killed (SIGKILL) mid-chunk.

The run ends with every case scored exactly once, the lost chunk claimed again by the surviving
worker, both workers' cases in the one run, and the summary a one-worker run of the same cases
gives.
"""

import os
import signal
import time

import pytest
from django.db import connection
from django.db.models import Count
from evolution_testing import client_for, small_world

from studio.evolution.models import CaseResult, EvalChunk, EvalRun
from studio.evolution.services.runs import eval_run_start
from studio.jobs.models import Job
from studio.jobs.testing import celery_worker, wait_for

CASES, CHUNK = 30, 3


def comparable(summary: dict) -> dict:
    """The summary without its latencies (wall-clock figures differ from run to run)."""
    return {k: v for k, v in summary.items() if k != "latency_s"}


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_two_workers_share_a_run_and_a_killed_workers_chunk_is_scored_again(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip(
            "SQLite is the one-worker set-up (docs/workers.md); several workers share PostgreSQL"
        )
    settings.JOB_LEASE_S, settings.EVAL_CHUNK_CASES = 2, CHUNK
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir,
        files=defect_files,
        actor=personas.admin,
        size=CASES,
        tmp_path=tmp_path,
        delay_s=0.1,
    )
    case_ids = list(dataset.cases.values_list("case_id", flat=True))
    queue = f"test-two-{os.getpid()}"
    one_at_a_time = {
        "EVAL_CASES_AT_ONCE": "1"
    }  # the kill below is timed on a chunk's cases scored one by one
    with celery_worker(queue=queue, node=f"{queue}-a", lease_s=2, extra_env=one_at_a_time) as a:
        started = time.monotonic()
        single = eval_run_start(
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            case_ids=case_ids,
            actor=personas.operator,
        )
        single = wait_for(
            lambda: EvalRun.objects.filter(pk=single.pk, status=EvalRun.SUCCEEDED).first(),
            timeout=120,
            what="the one-worker run",
        )
        single_s = time.monotonic() - started
        assert set(single.results.values_list("worker", flat=True)) == {
            Job.objects.get(pk=single.job_id).worker
        }

        with celery_worker(queue=queue, node=f"{queue}-b", lease_s=2, extra_env=one_at_a_time) as b:
            started = time.monotonic()
            both = eval_run_start(
                version=version,
                dataset=dataset,
                endpoint=endpoint,
                case_ids=case_ids,
                actor=personas.operator,
            )
            both = wait_for(
                lambda: EvalRun.objects.filter(pk=both.pk, status=EvalRun.SUCCEEDED).first(),
                timeout=120,
                what="the two-worker run",
            )
            both_s = time.monotonic() - started
            split = dict(both.results.values_list("worker").annotate(n=Count("id")))
            assert {w.split("@")[0] for w in split} == {a.node, b.node}  # both workers took chunks
            assert comparable(both.summary) == comparable(single.summary)

            started = time.monotonic()
            run = eval_run_start(
                version=version,
                dataset=dataset,
                endpoint=endpoint,
                case_ids=case_ids,
                actor=personas.operator,
            )
            assert run.chunks.count() == CASES // CHUNK
            job_worker = wait_for(
                lambda: Job.objects.get(pk=run.job_id).worker, timeout=60, what="the job to start"
            )
            victim, survivor = (b, a) if job_worker.startswith(f"{a.node}@") else (a, b)
            # the victim is a worker running a chunk task, not the run's job: kill it once it has
            # finished a chunk and scored a case of its next one, with more to go
            lost = wait_for(
                lambda: (
                    EvalChunk.objects.filter(
                        run=run, status=EvalChunk.DONE, worker__startswith=f"{victim.node}@"
                    ).exists()
                    and next(
                        (
                            c
                            for c in EvalChunk.objects.filter(
                                run=run,
                                status=EvalChunk.CLAIMED,
                                worker__startswith=f"{victim.node}@",
                            )
                            if 1
                            <= CaseResult.objects.filter(run=run, case_id__in=c.case_ids).count()
                            < CHUNK
                        ),
                        None,
                    )
                ),
                timeout=60,
                what="the other worker to be half-way through its second chunk",
            )
            os.kill(victim.pid, signal.SIGKILL)
            victim.process.wait(timeout=10)
            kept = {
                r.case_id: r.pk
                for r in CaseResult.objects.filter(run=run, worker__startswith=f"{victim.node}@")
            }
            run = wait_for(
                lambda: EvalRun.objects.filter(pk=run.pk, status=EvalRun.SUCCEEDED).first(),
                timeout=120,
                what="the run to finish on the surviving worker",
            )
            two_s = time.monotonic() - started

    results = CaseResult.objects.filter(run=run)
    per_case = dict(results.values_list("case_id").annotate(n=Count("id")))
    assert per_case == {c: 1 for c in case_ids}  # every case scored, exactly once
    assert comparable(run.summary) == comparable(single.summary)
    assert {
        r.case_id: r.pk for r in results.filter(worker__startswith=f"{victim.node}@")
    } == kept  # kept
    workers = {w.split("@")[0] for w in results.values_list("worker", flat=True)}
    assert workers == {a.node, b.node}  # both workers scored cases of the one run
    lost.refresh_from_db()
    assert (
        lost.status == EvalChunk.DONE
        and lost.claims == 2
        and lost.worker.startswith(f"{survivor.node}@")
    )
    assert set(run.chunks.values_list("status", flat=True)) == {EvalChunk.DONE}
    job = Job.objects.get(pk=run.job_id)
    assert (job.status, job.progress, run.attempts) == (Job.SUCCEEDED, 100, 1)
    assert f"chunk {lost.index} claimed again: no heartbeat from {victim.node}@" in job.log_tail
    assert job.result["scored_now"] == CASES and job.result["chunks"] == CASES // CHUNK
    assert job.outcome and job.outcome == Job.objects.get(pk=single.job_id).outcome
    page = client_for(personas.operator).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert (
        'data-status="succeeded"' in page
        and "(1 claimed more than once: its worker was lost, or its job stopped" in page
    )
    assert f"{a.node}@" in page and f"{b.node}@" in page
    print(
        f"\none worker: {single_s:.1f} s; two workers: {both_s:.1f} s, cases per worker {split}; "
        f"two workers, one killed: {two_s:.1f} s; cases per worker "
        f"{dict(results.values_list('worker').annotate(n=Count('id')))}; lost chunk {lost.index} "
        f"({len(set(kept) & set(lost.case_ids))} of its {CHUNK} cases kept)"
    )
