"""Run pages are live: status, progress, time left and the log come from the live panel that the
page polls while the job goes (training:run_live), for an evaluation and a replay as for training;
when the job has ended the panel asks for the whole page again, so the result shows."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from studio_testing import client_for

from studio.jobs.models import Job
from studio.training.models import TrainingRun

pytestmark = pytest.mark.django_db


def _active_run(tmp_path, *, kind: str, config: dict) -> TrainingRun:
    job = Job.objects.create(
        kind=f"test_{kind}",
        title=f"{kind} run",
        status=Job.RUNNING,
        params={},
        started_at=timezone.now() - timedelta(seconds=60),
        log_tail="step 1/1 eval: started\n",
    )
    return TrainingRun.objects.create(
        kind=kind,
        title=f"{kind} run",
        folder=str(tmp_path),
        config_digest="0" * 64,
        job=job,
        steps=[],
        config={kind: config},
    )


def test_an_evaluation_page_shows_its_items_scored_and_time_left_and_reloads_when_it_ends(
    personas, tmp_path
):
    run = _active_run(
        tmp_path,
        kind=TrainingRun.EVAL,
        config={"sets": ["live_qa", "ifeval"], "cases": 4, "ifeval": 2},
    )
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "live_qa.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i}"}) + "\n" for i in range(3))
    )
    mei = client_for(personas.ml_engineer)
    page = mei.get(f"/training/runs/{run.pk}/").content.decode()
    assert f'hx-get="/training/runs/{run.pk}/live/" hx-trigger="every 2s"' in page
    assert "3 of 6 items · about 60 s left" in page  # 60 s for 3 items, 3 to go
    assert 'id="run-status">running</span>' in page and "step 1/1 eval: started" in page

    live = mei.get(f"/training/runs/{run.pk}/live/")
    text = live.content.decode()
    assert live.status_code == 200 and "HX-Refresh" not in live
    assert "width: 50%" in text and '<pre class="log" id="run-log" hx-swap-oob="true">' in text

    Job.objects.filter(pk=run.job_id).update(
        status=Job.SUCCEEDED, finished_at=timezone.now(), progress=100
    )
    ended = mei.get(f"/training/runs/{run.pk}/live/")
    assert ended["HX-Refresh"] == "true" and "hx-trigger" not in ended.content.decode()


def test_a_replay_page_counts_its_recorded_requests(personas, tmp_path):
    run = _active_run(
        tmp_path,
        kind=TrainingRun.REPLAY,
        config={"concurrency": [1, 2], "warmup": 1, "measured": 4},
    )
    (tmp_path / "replay").mkdir()
    (tmp_path / "replay" / "requests.jsonl").write_text(
        '{"phase": "warmup"}\n{"phase": "measured"}\n'
    )
    text = client_for(personas.operator).get(f"/training/runs/{run.pk}/live/").content.decode()
    assert "2 of 10 requests" in text and 'id="run-bar" style="width: 20%"' in text
    assert client_for(personas.outsider).get(f"/training/runs/{run.pk}/live/").status_code == 403
