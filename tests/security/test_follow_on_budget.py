"""Issue 50, finding 5: moving a label queued evaluation runs outside every quota.

The automatic compatibility job asked for its cells with no user, so each cell's evaluation run had
no owner, was not marked automatic and counted against nobody: an operator moving ``staging`` across
versions queued one run per move. Now every job a label move causes is a follow-on queued on behalf
of the person who moved it: automatic (the follow-on queue, yielding to people's jobs), counted
against that person's follow-on budget (``JOB_FOLLOW_ON_QUOTA_PER_USER``; past it the cell is not
queued and the job that asked says why), and theirs to cancel.

Through the real entry point, the label-move form; the jobs the moves queue are recorded instead of
run, except the fill jobs, which a worker would take at once (so the evaluation runs stay queued,
as they do behind a busy worker).
"""

from __future__ import annotations

import pytest

from studio.compatibility.models import Cell, LabelServer
from studio.compatibility.testing import source_dataset
from studio.endpoints.models import ModelEndpoint
from studio.harnesses.services import harness_version_create, label_move
from studio.jobs.models import Job
from studio.jobs.services import job_run
from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db


def test_label_moves_queue_follow_ons_in_the_movers_budget_on_the_follow_on_queue(
    personas,
    demo_version,
    demo_files,
    settings,
    tmp_path,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    from studio.jobs import tasks

    settings.COMPATIBILITY_CASES = 6
    settings.JOB_FOLLOW_ON_QUOTA_PER_USER = 3
    source_dataset(30)
    script = tmp_path / "model.json"
    script.write_text('["Thanks for the comment!"]')
    model = ModelEndpoint.objects.create(
        name="model", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    harness = demo_version.harness
    for label in ("production", "staging"):
        LabelServer.objects.create(harness=harness, label=label, endpoint=model)
    label_move(
        harness=harness,
        name="production",
        version=demo_version,
        actor=personas.admin,
        reason="live",
    )
    Job.objects.all().delete()  # the set-up's own move is not what is measured
    versions = []
    for n in range(4):
        files = dict(demo_files)
        path = next(p for p in sorted(files) if p.endswith(".md"))
        files[path] += f"\n\nrevision {n}\n"
        versions.append(
            harness_version_create(
                harness=harness,
                files=files,
                author=personas.operator,
                message=f"revision {n}",
                parent=demo_version,
            )
        )

    sent: list[tuple[int, str | None]] = []

    def record(args, **options):
        sent.append((args[0], options.get("queue")))

    monkeypatch.setattr(tasks.run_job, "apply_async", record)
    monkeypatch.setattr(tasks.run_job, "delay", lambda job_id: record((job_id,)))
    olivia = client_for(personas.operator)
    for version in versions:
        with django_capture_on_commit_callbacks(execute=True):
            moved = olivia.post(
                f"/h/{harness.name}/labels/move/",
                {"label": "staging", "version": version.number, "reason": "try it"},
            )
        assert moved.status_code == 302
        for fill in Job.objects.filter(kind="compatibility_fill", status=Job.QUEUED):
            with django_capture_on_commit_callbacks(execute=True):  # a worker takes the fill
                job_run(job_id=fill.pk, heartbeat=False)

    jobs = list(Job.objects.order_by("pk"))
    runs = [job for job in jobs if job.kind == "evolution_eval_run"]
    assert runs, "the label moves asked for no cell"
    # every job the moves caused is olivia's follow-on: automatic, hers, on the follow-on queue
    assert {(job.created_by, job.automatic) for job in jobs} == {(personas.operator, True)}
    queues = dict(sent)
    assert {queues[job.pk] for job in jobs} == {settings.CELERY_FOLLOW_ON_QUEUE}
    # ... within her follow-on budget: at most 3 queued or running at once, and a fill that found
    # the budget spent says so
    active = Job.objects.filter(created_by=personas.operator, status__in=Job.ACTIVE)
    assert active.count() <= 3
    assert len(runs) < 1 + len(versions)  # the production pair and one cell per move, unbudgeted
    refused = [
        job
        for job in Job.objects.filter(kind="compatibility_fill")
        if "not asked for: follow-on jobs: olivia already has" in job.log_tail
    ]
    assert refused and "JOB_FOLLOW_ON_QUOTA_PER_USER=3" in refused[0].log_tail
    for cell in Cell.objects.all():
        assert cell.automatic and cell.requested_by == personas.operator
        assert cell.run.created_by == personas.operator

    # hers to cancel (a reviewer may not); a cancelled cell is not queued again by the next move
    queued = runs[-1]
    rafael = client_for(personas.reviewer).post(f"/jobs/{queued.pk}/cancel/")
    assert rafael.status_code == 403
    assert client_for(personas.operator).post(f"/jobs/{queued.pk}/cancel/").status_code == 302
    queued.refresh_from_db()
    assert queued.status == Job.CANCELLED
    cancelled = Cell.objects.get(run__job=queued)
    before = Job.objects.filter(kind="evolution_eval_run").count()
    with django_capture_on_commit_callbacks(execute=True):
        olivia.post(
            f"/h/{harness.name}/labels/move/",
            {"label": "staging", "version": cancelled.version.number, "reason": "again"},
        )
    for fill in Job.objects.filter(kind="compatibility_fill", status=Job.QUEUED):
        with django_capture_on_commit_callbacks(execute=True):
            job_run(job_id=fill.pk, heartbeat=False)
    assert Job.objects.filter(kind="evolution_eval_run").count() == before
    cancelled.run.refresh_from_db()
    assert cancelled.run.badge == "cancelled"
