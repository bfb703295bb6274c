"""A run's chunks: the round-robin plan, the atomic claim, the lease and the claim again of a lost
worker's chunk."""

import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from evolution_testing import small_world

from studio.evolution.models import CaseResult, EvalChunk, EvalRun
from studio.evolution.services.chunks import (
    ChunkLost,
    chunk_claim,
    chunk_plan,
    chunk_release,
    chunk_renew,
    chunk_score,
    chunks_claimable,
    chunks_unfinished,
)
from studio.evolution.services.runs import _scorer, eval_run_score_chunk, eval_run_start
from studio.jobs.models import Job
from studio.jobs.services import job_run


def test_the_plan_deals_cases_round_robin_into_chunks_that_differ_by_at_most_one():
    ids = [f"c{i:02d}" for i in range(20)]
    plan = chunk_plan(case_ids=ids, size=8)
    assert [len(c) for c in plan] == [7, 7, 6]  # not 8, 8, 4: the last worker does not idle
    assert plan[0][:3] == [
        "c00",
        "c03",
        "c06",
    ]  # each chunk samples the whole list (every category)
    assert sorted(c for chunk in plan for c in chunk) == ids
    assert chunk_plan(case_ids=ids, size=50) == [ids]
    assert chunk_plan(case_ids=ids[:1], size=8) == [["c00"]]


def _run(personas, demo_sets_dir, defect_files, tmp_path, settings, *, size=6, chunk=3) -> EvalRun:
    settings.EVAL_CHUNK_CASES = chunk
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir,
        files=defect_files,
        actor=personas.admin,
        size=size,
        tmp_path=tmp_path,
    )
    return eval_run_start(
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=list(dataset.cases.values_list("case_id", flat=True)),
        actor=personas.operator,
    )


@pytest.mark.django_db
def test_a_claim_is_a_lease_and_a_lost_workers_chunk_is_claimed_again(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    settings.JOB_LEASE_S = 20
    run = _run(personas, demo_sets_dir, defect_files, tmp_path, settings)
    assert list(run.chunks.values_list("index", "case_ids")) == [
        (0, run.case_ids[0::2]),
        (1, run.case_ids[1::2]),
    ]
    a = chunk_claim(run_id=run.pk, worker="a@host pid 1")
    b = chunk_claim(run_id=run.pk, worker="b@host pid 2")
    assert (a.chunk.index, b.chunk.index, a.taken_from) == (0, 1, "")
    assert (
        chunk_claim(run_id=run.pk, worker="c@host pid 3") is None
    )  # both leased: nothing to claim
    assert chunks_claimable(run_id=run.pk) == 0 and chunk_renew(claim=a) and chunk_renew(claim=b)

    later = timezone.now() + timedelta(
        seconds=21
    )  # a's worker died: no heartbeat for longer than the lease
    EvalChunk.objects.filter(pk=b.chunk.pk).update(heartbeat_at=later)  # b is alive
    assert chunks_claimable(run_id=run.pk, now=later) == 1
    c = chunk_claim(run_id=run.pk, worker="c@host pid 3", now=later)
    assert (c.chunk.index, c.taken_from, c.chunk.claims) == (0, "a@host pid 1", 2)
    assert c.token != a.token
    assert not chunk_renew(claim=a) and not chunk_release(
        claim=a
    )  # a's claim is void: it cannot renew or hand back
    with pytest.raises(ChunkLost):  # a woken-up a stops before its first case: nothing scored twice
        chunk_score(
            claim=a,
            scorer=None,
            attempt=1,
            worker="a@host pid 1",
            on_case=lambda: None,
            heartbeat=False,
        )
    assert CaseResult.objects.filter(run=run).count() == 0
    assert (
        EvalChunk.objects.get(pk=c.chunk.pk).token == c.token
    )  # a's failed attempt left c's claim alone

    scorer = _scorer(run)
    try:
        assert (
            chunk_score(
                claim=c,
                scorer=scorer,
                attempt=1,
                worker="c@host pid 3",
                on_case=lambda: None,
                heartbeat=False,
            )
            == 3
        )
    finally:
        scorer.close()
    chunk = EvalChunk.objects.get(pk=c.chunk.pk)
    assert (chunk.status, chunk.worker, chunk.token) == (EvalChunk.DONE, "c@host pid 3", "")
    assert set(CaseResult.objects.filter(run=run).values_list("worker", flat=True)) == {
        "c@host pid 3"
    }
    assert (
        chunk_release(claim=b) and EvalChunk.objects.get(pk=b.chunk.pk).status == EvalChunk.PENDING
    )
    assert chunks_unfinished(run_id=run.pk) == 1


@pytest.mark.django_db
def test_a_chunk_claimed_again_skips_the_cases_its_lost_worker_scored(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    run = _run(personas, demo_sets_dir, defect_files, tmp_path, settings)
    a = chunk_claim(run_id=run.pk, worker="a@host pid 1")
    scorer = _scorer(run)
    try:
        stop = {"n": 0}

        def die_after_two():
            stop["n"] += 1
            if stop["n"] == 2:
                raise KeyboardInterrupt("killed")

        with pytest.raises(KeyboardInterrupt):
            chunk_score(
                claim=a,
                scorer=scorer,
                attempt=1,
                worker="a@host pid 1",
                on_case=die_after_two,
                heartbeat=False,
            )
        assert (
            EvalChunk.objects.get(pk=a.chunk.pk).status == EvalChunk.PENDING
        )  # handed back on the way out
        first = {r.case_id: r.pk for r in CaseResult.objects.filter(run=run)}
        assert len(first) == 2
        again = chunk_claim(run_id=run.pk, worker="b@host pid 2")
        assert again.chunk.pk == a.chunk.pk
        assert (
            chunk_score(
                claim=again,
                scorer=scorer,
                attempt=2,
                worker="b@host pid 2",
                on_case=lambda: None,
                heartbeat=False,
            )
            == 1
        )
    finally:
        scorer.close()
    rows = CaseResult.objects.filter(run=run, case_id__in=a.chunk.case_ids)
    assert rows.count() == 3 and all(rows.get(case_id=c).pk == pk for c, pk in first.items())
    assert Counter(rows.values_list("worker", flat=True)) == {"a@host pid 1": 2, "b@host pid 2": 1}


@pytest.mark.django_db
def test_one_inline_job_scores_every_chunk_and_a_chunk_task_stops_on_cancel(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    run = _run(personas, demo_sets_dir, defect_files, tmp_path, settings, size=9, chunk=3)
    assert run.chunks.count() == 3
    # a chunk task (the Celery task's body, inline) takes one chunk and scores it
    assert eval_run_score_chunk(run_id=run.pk, worker="helper@host pid 9", heartbeat=False) == 3
    Job.objects.filter(pk=run.job_id).update(cancel_requested_at=timezone.now())
    assert eval_run_score_chunk(run_id=run.pk, worker="helper@host pid 9", heartbeat=False) == 0
    assert (
        run.chunks.filter(status=EvalChunk.PENDING).count() == 2
    )  # a cancelled run's chunks are not taken
    Job.objects.filter(pk=run.job_id).update(cancel_requested_at=None)
    job = job_run(job_id=run.job_id, worker="main@host pid 1", heartbeat=False)
    assert job.status == Job.SUCCEEDED, job.error
    run.refresh_from_db()
    assert run.status == EvalRun.SUCCEEDED and run.results.count() == 9
    assert job.result["workers"] == {"helper@host pid 9": 3, "main@host pid 1": 6}
    assert (job.result["kept"], job.result["scored_now"], job.result["chunks"]) == (3, 6, 3)
    assert list(run.chunks.values_list("status", flat=True)) == [EvalChunk.DONE] * 3
    assert "chunk 0 (3 case(s)) done on helper@host pid 9" in job.log_tail


@pytest.mark.django_db
def test_cases_scored_several_at_once_get_the_results_of_one_at_a_time(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    """EVAL_CASES_AT_ONCE > 1 (a machine with cores to spare, a GPU endpoint): a claimant scores its
    chunk's cases on several scorers at once, each case once, with the verdicts one scorer at a time
    gives."""
    settings.EVAL_CHUNK_CASES = 7
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=7, tmp_path=tmp_path
    )
    results = {}
    for at_once in (1, 3):
        settings.EVAL_CASES_AT_ONCE = at_once
        run = eval_run_start(
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            case_ids=list(dataset.cases.values_list("case_id", flat=True)),
            actor=personas.operator,
        )
        job = job_run(job_id=run.job_id, worker="main@host pid 1", heartbeat=False)
        assert job.status == Job.SUCCEEDED, job.error
        run.refresh_from_db()
        rows = list(
            run.results.values_list("case_id", "accuracy", "effectiveness", "route", "reply")
        )
        assert run.status == EvalRun.SUCCEEDED and len(rows) == 7 == len({r[0] for r in rows})
        results[at_once] = sorted(rows)
    assert results[3] == results[1]


@pytest.mark.django_db(transaction=True)
def test_concurrent_claimants_never_take_the_same_chunk(
    personas, demo_sets_dir, defect_files, tmp_path, settings
):
    if not connection.features.has_select_for_update_skip_locked:
        pytest.skip("SQLite: one worker; its claims are checked by the tests above")
    run = _run(personas, demo_sets_dir, defect_files, tmp_path, settings, size=24, chunk=1)
    run.chunks.update(
        status=EvalChunk.PENDING, claims=0, worker=""
    )  # its job ran eagerly at commit: again
    taken: list[tuple[str, int]] = []
    start = threading.Barrier(8)

    def claimant(n: int) -> None:
        try:
            start.wait()
            while (claim := chunk_claim(run_id=run.pk, worker=f"w{n}")) is not None:
                taken.append((f"w{n}", claim.chunk.index))
        finally:
            connection.close()

    threads = [threading.Thread(target=claimant, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(index for _, index in taken) == list(
        range(24)
    )  # each chunk claimed once, by one claimant
    assert len({worker for worker, _ in taken}) > 1
    assert set(run.chunks.values_list("claims", flat=True)) == {1}
