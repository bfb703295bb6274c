"""An evaluation run's cases in chunks that any worker claims, leases and scores (docs/workers.md).

A run's cases are cut into ``EvalChunk`` rows of at most EVAL_CHUNK_CASES cases,
dealt round-robin (chunk i holds cases i, i+n, i+2n, ...), so every chunk carries
the same mix of categories and takes about as long as the others; the chunks
differ by at most one case. A worker *claims* a chunk in one conditional UPDATE
(on PostgreSQL after ``SELECT ... FOR UPDATE SKIP LOCKED``, so claimants never
wait on each other): a pending chunk, or a claimed one whose claimant stopped
writing its heartbeat JOB_LEASE_S ago. Each claim gets a new ``token``; a
claimant renews its lease before every case and from a side thread, and stops
the moment the renewal finds the token changed (someone re-claimed the chunk).
A case is scored exactly once: a claimant skips cases that already have a
``CaseResult``, and the row is written with ``get_or_create`` under the
unique (run, case_id) constraint.

Scoring a case is ``evaluation.scoring.CaseScorer.score`` (the caller's
scorers); this module decides only who scores which cases. Given several
scorers (one per thread: policies keep per-request state), a claimant scores
that many of its chunk's cases at once, so a local model's concurrent requests
share its engine's slots (llama.cpp decodes them in one batch); this thread
alone touches the database.
"""

from __future__ import annotations

import queue
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from studio.evolution.models import CaseResult, DatasetCase, EvalChunk, EvalRun


class ScorerPool(list):
    """Scorers that score a chunk's cases at once, one per thread (``chunk_score``); closed
    together."""

    def close(self) -> None:
        for scorer in self:
            scorer.close()


class ChunkLost(Exception):
    """The claimant's lease ran out and another worker claimed the chunk: stop scoring it."""


class ChunkStopped(Exception):
    """The claimant was told to stop (the run was cancelled or ended); the chunk was handed back."""


@dataclass(frozen=True)
class Claim:
    chunk: EvalChunk
    token: str
    taken_from: str  # the lost claimant's worker when a stale chunk was claimed again, else ""


def chunk_plan(*, case_ids: list[str], size: int) -> list[list[str]]:
    """``case_ids`` dealt round-robin into ceil(n / size) chunks (sizes differ by at most one)."""
    count = -(-len(case_ids) // max(1, size))
    return [case_ids[i::count] for i in range(count)]


def chunks_ensure(*, run: EvalRun) -> int:
    """Create the run's chunks if it has none (a run stored before chunks existed, too). Returns how
    many it has."""
    existing = run.chunks.count()
    if existing:
        return existing
    plan = chunk_plan(case_ids=list(run.case_ids), size=settings.EVAL_CHUNK_CASES)
    EvalChunk.objects.bulk_create(
        [EvalChunk(run=run, index=i, case_ids=ids) for i, ids in enumerate(plan)],
        ignore_conflicts=True,
    )  # two jobs of one run make the same chunks
    return run.chunks.count()


def _stale_before(now):
    return now - timedelta(seconds=settings.JOB_LEASE_S)


def _claimable(now) -> Q:
    return Q(status=EvalChunk.PENDING) | Q(
        status=EvalChunk.CLAIMED, heartbeat_at__lt=_stale_before(now)
    )


def chunks_claimable(*, run_id: int, now=None) -> int:
    return EvalChunk.objects.filter(run_id=run_id).filter(_claimable(now or timezone.now())).count()


def chunks_unfinished(*, run_id: int) -> int:
    return EvalChunk.objects.filter(run_id=run_id).exclude(status=EvalChunk.DONE).count()


def chunk_claim(*, run_id: int, worker: str, now=None) -> Claim | None:
    """Claim the run's first claimable chunk for ``worker``; None when every chunk is done or
    leased."""
    for _ in range(
        10
    ):  # another claimant won the row between the read and the write: try the next one
        now = now or timezone.now()
        with transaction.atomic():
            candidates = (
                EvalChunk.objects.filter(run_id=run_id).filter(_claimable(now)).order_by("index")
            )
            if connection.features.has_select_for_update_skip_locked:
                candidates = candidates.select_for_update(skip_locked=True)
            chunk = candidates.only("pk", "status", "worker").first()
            if chunk is None:
                return None
            taken_from = chunk.worker if chunk.status == EvalChunk.CLAIMED else ""
            token = uuid.uuid4().hex
            won = (
                EvalChunk.objects.filter(pk=chunk.pk)
                .filter(_claimable(now))
                .update(
                    status=EvalChunk.CLAIMED,
                    token=token,
                    worker=worker[:200],
                    claims=F("claims") + 1,
                    claimed_at=now,
                    heartbeat_at=now,
                    finished_at=None,
                )
            )
        if won:
            return Claim(
                chunk=EvalChunk.objects.select_related("run").get(pk=chunk.pk),
                token=token,
                taken_from=taken_from,
            )
        now = None
    return None


def chunk_renew(*, claim: Claim) -> bool:
    """Renew the lease; False when the chunk is no longer this claim's."""
    return bool(
        EvalChunk.objects.filter(
            pk=claim.chunk.pk, token=claim.token, status=EvalChunk.CLAIMED
        ).update(heartbeat_at=timezone.now())
    )


def chunk_release(*, claim: Claim) -> bool:
    """Hand an unfinished chunk back (pending) so another claimant scores the rest; a no-op if it is
    not ours."""
    return bool(
        EvalChunk.objects.filter(
            pk=claim.chunk.pk, token=claim.token, status=EvalChunk.CLAIMED
        ).update(status=EvalChunk.PENDING, token="")
    )


def chunk_score(
    *, claim: Claim, scorer, attempt: int, worker: str, on_case: Callable[[], Any], heartbeat: bool
) -> int:
    """Score the claimed chunk's cases that have no result yet; returns how many this call wrote.

    ``scorer``: one scorer, or a list of them to score that many cases at once (each in a thread of
    its own; results are written here, in this thread, as they finish). ``on_case`` runs after each
    case (progress; it raises to stop, and the chunk is handed back; cases already running end
    within their trajectory budget and are scored again by the next claimant). ``heartbeat`` starts
    a side thread renewing the lease (only in a worker of its own: inline in a test's transaction
    the thread's connection would not see the chunk).
    """
    from studio.evolution.rows import result_fields
    from studio.jobs.services import Heartbeat

    scorers = list(scorer) if isinstance(scorer, list | tuple) else [scorer]
    chunk = claim.chunk
    cases = {
        c.case_id: c
        for c in DatasetCase.objects.filter(
            dataset_id=chunk.run.dataset_id, case_id__in=chunk.case_ids
        )
    }
    beat = Heartbeat(
        lambda: chunk_renew(claim=claim),
        interval_s=settings.JOB_HEARTBEAT_S,
        name=f"eval-chunk-{chunk.pk}-heartbeat",
    )
    if heartbeat:
        beat.start()
    idle: queue.SimpleQueue = queue.SimpleQueue()
    for one in scorers:
        idle.put(one)

    def score(data: dict[str, Any]) -> dict[str, Any]:
        mine = idle.get()
        try:
            return mine.score(data)
        finally:
            idle.put(mine)

    def keep(case_id: str, row: dict[str, Any]) -> int:
        case = cases[case_id]
        _, created = CaseResult.objects.get_or_create(
            run_id=chunk.run_id,
            case_id=case_id,
            defaults=dict(
                category=case.category,
                split=case.split,
                **result_fields(row),
                attempt=attempt,
                worker=worker[:200],
            ),
        )
        return int(created)

    scored, finished = 0, False
    pool = ThreadPoolExecutor(max_workers=len(scorers), thread_name_prefix=f"eval-chunk-{chunk.pk}")
    running: dict[Any, str] = {}
    try:
        todo = list(chunk.case_ids)
        while todo or running:
            while todo and len(running) < len(scorers):
                case_id = todo.pop(0)
                if not chunk_renew(claim=claim):
                    raise ChunkLost(
                        f"chunk {chunk.index} of run #{chunk.run_id} "
                        "was claimed again by another worker"
                    )
                if CaseResult.objects.filter(run_id=chunk.run_id, case_id=case_id).exists():
                    continue  # kept from an earlier claim of this chunk
                running[pool.submit(score, cases[case_id].data)] = case_id
            if not running:
                continue
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                scored += keep(running.pop(future), future.result())
                on_case()
        finished = bool(
            EvalChunk.objects.filter(pk=chunk.pk, token=claim.token).update(
                status=EvalChunk.DONE, token="", finished_at=timezone.now()
            )
        )
        if not finished:
            raise ChunkLost(
                f"chunk {chunk.index} of run #{chunk.run_id} was claimed again by another worker"
            )
    finally:
        for future in running:
            future.cancel()  # stopped: cases not started are left to the chunk's next claimant
        pool.shutdown(
            wait=True
        )  # a case already running ends within its trajectory budget; it is not kept
        beat.stopped.set()
        if heartbeat:
            beat.join(timeout=5)
        if not finished:
            chunk_release(claim=claim)
    return scored
