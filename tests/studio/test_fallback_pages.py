"""A fallback is not a success: runs whose requests mostly fell back say so on every page and gate.

The replay's record is what ``python -m serving replay`` writes when every request ended in the
Harness's fallback reply (``studio.releases.testing.replay_run`` with ``status="fallback"``, read
back by serving's own reader); the evaluation's summary is ``training.self_eval``'s, computed by its
own ``set_summary`` from rows that all fell back. The pages are read through the test client as the
ML engineer.
"""

from __future__ import annotations

from html import unescape

import pytest
from studio_testing import client_for

from studio.releases.models import Release
from studio.releases.testing import _run, ifeval_run, replay_run, trained_checkpoint
from studio.training.models import TrainingRun

pytestmark = pytest.mark.django_db

WARNING = "C=1: 3 of 3 requests fell back to the Harness's fallback reply"


@pytest.fixture
def checkpoint(settings, tmp_path):
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    return trained_checkpoint(tmp_path / "runs" / "run-ckpt")


def test_a_replay_whose_requests_all_fell_back_warns_shows_no_answer_and_fails_the_latency_gate(
    personas, demo_version, checkpoint, tmp_path
):
    final = checkpoint.final_dir
    replay = replay_run(
        tmp_path / "replay",
        checkpoint=final,
        harness_version=demo_version,
        walls={1: [1.0, 1.5, 2.0]},
        status="fallback",
    )
    level = replay.summary["replay"]["levels"]["1"]
    assert (
        level["success_rate"] == 1.0 and level["answered_rate"] == 0.0 and level["mostly_fallback"]
    )
    client = client_for(personas.ml_engineer)

    dashboard = unescape(client.get(f"/replay/{replay.pk}/").content.decode())
    assert 'id="replay-fallback-warning"' in dashboard and WARNING in dashboard
    assert "<th>Answered</th>" in dashboard and 'data-key="answered_rate">0.0%</td>' in dashboard
    run_page = unescape(client.get(f"/training/runs/{replay.pk}/").content.decode())
    assert 'id="replay-fallback-warning"' in run_page and WARNING in run_page

    ifeval_run(tmp_path / "eval", model=final, prompt_strict=60.0)
    client.post(
        "/releases/new/",
        {
            "checkpoint": str(final),
            "draft_head": "",
            "notes": "",
            "action": "draft",
            "harness_version": f"{demo_version.harness.name}@v{demo_version.number}",
        },
    )
    gate = {g["name"]: g for g in Release.objects.get().gates}["latency"]
    assert gate["status"] == "fail" and gate["run_id"] == replay.pk
    assert gate["detail"].startswith(WARNING) and "the gate needs answers to time" in gate["detail"]


def test_a_checkpoint_evaluation_whose_cases_fell_back_warns_beside_its_scores(
    personas, checkpoint, tmp_path
):
    from training.runs import update_json
    from training.self_eval import set_summary

    rows = [
        {
            "id": f"c{i}",
            "category": "item_qa",
            "outcome": "fallback",
            "accuracy": 1.0,
            "effectiveness": 0.0,
            "avg": 0.5,
            "rubric_avg": None,
            "reasons": [],
            "error": None,
        }
        for i in range(4)
    ]
    run = _run(kind=TrainingRun.EVAL, folder=tmp_path / "eval", model=str(checkpoint.final_dir))
    (run.path / "eval").mkdir(parents=True)
    update_json(
        run.path / "eval" / "summary.json",
        lambda current: current.update(
            {
                "model": str(checkpoint.final_dir),
                "live_qa": set_summary(rows),
                "ifeval": {
                    "error": "IFEvalSourceMissing: IFEval prompts not found at /nowhere.jsonl"
                },
            }
        ),
    )
    page = unescape(
        client_for(personas.ml_engineer).get(f"/training/runs/{run.pk}/").content.decode()
    )
    assert 'id="eval-fallback-live_qa"' in page
    assert (
        "4 of 4 cases fell back to the Harness's fallback "
        "reply: the scores say how the fallback is judged" in page
    )
    assert "fallback 4" in page
    # the set that failed says why; the set that finished is still shown
    assert 'id="eval-error-ifeval"' in page and "failed: IFEvalSourceMissing" in page
    assert '<tr data-set="live_qa"><td>T1 Live-Stream QA' in page


# --- issue 38, item 6: one rule for every page, list and badge: where most requests fell back, say
# so first ---

FLAG = (
    '<span class="fallback-flag" data-fallback="mostly"><span '
    'class="status status-fallback">Mostly fallback</span>'
)


def _row_of(html: str, marker: str) -> str:
    """The table row of ``html`` holding ``marker``."""
    before, after = html.split(marker, 1)
    return before[before.rindex("<tr") :] + marker + after[: after.index("</tr>")]


def _chatter(tmp_path, actor, ids=None):
    """A scripted model that never loads a reply skill: the stop gate's retries run out and it falls
    back."""
    import json

    from studio.endpoints.services import endpoint_save

    script = tmp_path / "chatter.json"
    outputs = ["Hello there, lovely to see you all!"] * 8
    script.write_text(json.dumps({i: outputs for i in ids} if ids else outputs))
    return endpoint_save(
        endpoint=None,
        name="chatter",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=actor,
        script_path=str(script),
    )


def test_the_jobs_list_puts_the_flag_first_for_every_kind_that_fell_back(
    personas, demo_version, tmp_path, django_capture_on_commit_callbacks
):
    """A playground run that fell back, an evaluation run whose cases all fell back and a checkpoint
    evaluation of such cases: each row starts with the flag, and none is the green "ran" of a real
    reply."""
    import json

    from studio.compatibility.testing import dev_cases
    from studio.evolution.services.datasets import dataset_import
    from studio.evolution.services.runs import eval_run_start
    from studio.jobs.models import Job
    from studio.jobs.registry import JOB_KINDS
    from training.self_eval import set_summary

    client = client_for(personas.operator)
    cases, catalogue = dev_cases(5)
    dataset = dataset_import(
        name="dev-5",
        text="\n".join(json.dumps(c) for c in cases),
        source="dev.jsonl",
        actor=personas.admin,
        catalogue=catalogue,
    )
    chatter = _chatter(
        tmp_path, personas.ml_engineer, ids=[c["id"] for c in cases] + ["playground-comment"]
    )
    with django_capture_on_commit_callbacks(execute=True):
        posted = client.post(
            "/playground/",
            {
                "version": demo_version.pk,
                "endpoint": chatter.pk,
                "comment": "How much?",
                "request_json": '{"id": "pg", "comments": ["x"], "room": {"current_link_id": 1, '
                '"shelf": [1, 2, 3]}}',
            },
        )
        run = eval_run_start(
            version=demo_version,
            dataset=dataset,
            endpoint=chatter,
            case_ids=[c["id"] for c in cases],
            actor=personas.operator,
        )
    assert posted.status_code == 302, unescape(posted.content.decode())[-3000:]
    played = Job.objects.get(kind="playground_run")
    assert played.result["trajectory"]["outcome"] == "fallback", played.error
    rows = [
        {
            "id": f"c{i}",
            "category": "item_qa",
            "outcome": "fallback",
            "accuracy": 1.0,
            "effectiveness": 0.0,
            "avg": 0.5,
            "rubric_avg": None,
            "reasons": [],
            "error": None,
        }
        for i in range(5)
    ]
    result = {"summary": {"evaluation": {"live_qa": set_summary(rows)}}}
    evaluated = Job.objects.create(
        kind="checkpoint_eval",
        title="Checkpoint evaluation",
        status=Job.SUCCEEDED,
        result=result,
        outcome=JOB_KINDS["checkpoint_eval"].outcome_of(result),
    )

    listing = unescape(client.get("/jobs/").content.decode())
    for job, counts in (
        (played, "1 of 1 request fell back"),
        (run.job, "5 of 5 cases fell back"),
        (evaluated, "live_qa: 5 of 5 cases fell back; live_qa AVG 50.0"),
    ):
        row = _row_of(listing, f'href="/jobs/{job.pk}/"')
        cell = row.split('class="job-state">', 1)[1]
        assert cell.startswith(FLAG), cell  # first, before the status and any figure
        assert counts in cell and "status-succeeded" not in row
    page = unescape(client.get(f"/jobs/{evaluated.pk}/").content.decode())
    assert (
        '<span id="job-outcome">' + FLAG in page
        and 'class="status" id="job-state">ran</span>' in page
    )


def test_a_job_that_replied_stays_a_plain_ran(
    personas, demo_version, tmp_path, django_capture_on_commit_callbacks
):
    import json

    from studio.endpoints.services import endpoint_save
    from studio.jobs.models import Job
    from studio.playground.examples import example_request

    script = tmp_path / "replies.json"
    script.write_text(
        json.dumps({"dev-0001": ["Thanks!"]})
    )  # a keyed script answers the examples with their gold
    endpoint = endpoint_save(
        endpoint=None,
        name="replies",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
        script_path=str(script),
    )
    with django_capture_on_commit_callbacks(execute=True):
        client_for(personas.operator).post(
            "/playground/",
            {
                "version": demo_version.pk,
                "endpoint": endpoint.pk,
                "request_json": json.dumps(example_request(name="product_price")),
            },
        )
    job = Job.objects.get(kind="playground_run")
    listing = client_for(personas.operator).get("/jobs/").content.decode()
    row = _row_of(listing, f'href="/jobs/{job.pk}/"')
    assert job.result["trajectory"]["outcome"] == "replied", job.result["trajectory"].get(
        "outcome_reason"
    )
    assert 'status-succeeded">ran</span>' in row and "Mostly fallback" not in row


def test_the_replay_list_flags_a_replay_that_fell_back_before_its_p95(
    personas, demo_version, checkpoint, tmp_path
):
    final = checkpoint.final_dir
    fell = replay_run(
        tmp_path / "fell",
        checkpoint=final,
        harness_version=demo_version,
        walls={1: [1.0, 1.5, 2.0]},
        status="fallback",
    )
    answered = replay_run(
        tmp_path / "answered",
        checkpoint=final,
        harness_version=demo_version,
        walls={1: [1.0, 1.5, 2.0]},
    )
    listing = unescape(client_for(personas.reviewer).get("/replay/").content.decode())
    row = _row_of(listing, f'data-run="{fell.pk}"')
    state = row.split('class="replay-state">', 1)[1]
    assert state.startswith(FLAG) and "C=1: 3 of 3 requests fell back" in state
    assert (
        row.index("Mostly fallback") < row.index("C=1: 1.950 s") and "status-succeeded" not in row
    )
    assert "Mostly fallback" not in _row_of(listing, f'data-run="{answered.pk}"')

    # the training run list: the replay's job, its outcome written as the job service writes it
    from studio.jobs.models import Job
    from studio.jobs.registry import JOB_KINDS

    for run in (fell, answered):
        Job.objects.filter(pk=run.job_id).update(
            outcome=JOB_KINDS["replay_run"].outcome_of({"summary": run.summary})
        )
    runs = unescape(client_for(personas.reviewer).get("/training/").content.decode())
    row = _row_of(runs, f'href="/training/runs/{fell.pk}/"')
    assert FLAG in row and "C=1: 3 of 3 requests fell back" in row and "status-succeeded" not in row
    assert "Mostly fallback" not in _row_of(runs, f'href="/training/runs/{answered.pk}/"')
    dashboard = unescape(client_for(personas.reviewer).get(f"/replay/{fell.pk}/").content.decode())
    assert '<span class="status status-fallback">Mostly fallback</span> ' + WARNING in dashboard


def test_a_compatibility_cell_whose_cases_fell_back_is_flagged_before_its_avg(
    personas, demo_version, settings, tmp_path
):
    from studio.compatibility.testing import finished_cell, source_dataset
    from studio.endpoints.models import ModelEndpoint

    settings.COMPATIBILITY_CASES = 8
    source_dataset(20)
    script = tmp_path / "model.json"
    script.write_text("{}")
    model = ModelEndpoint.objects.create(
        name="fell-back", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    cell = finished_cell(
        endpoint=model,
        version=demo_version,
        avg=lambda case_id: 0.5,
        outcome=lambda case_id: "fallback" if not case_id.endswith("~tools") else "replied",
    )
    page = unescape(
        client_for(personas.reviewer)
        .get(f"/compatibility/?harness={demo_version.harness.name}")
        .content.decode()
    )
    td = page.split(f'href="/evolution/runs/{cell.run_id}/"')[0]
    td = td[td.rindex('<td class="cell') :]
    assert FLAG in td and td.index("Mostly fallback") < td.index("AVG 50.0")
    assert "cases fell back" in td
