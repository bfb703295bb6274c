"""A job's own status (ran, failed, cancelled) apart from what the work did: a playground run that
ran and whose agent fell back shows the "Mostly fallback" flag first and a plain (not green) "ran",
on its page and in the job list (the one rule of studio.jobs.fallback)."""

from __future__ import annotations

import json

import pytest
from studio_testing import client_for

from studio.endpoints.services import endpoint_save
from studio.jobs.models import Job

pytestmark = pytest.mark.django_db


def test_a_playground_job_whose_agent_fell_back_ran_and_says_the_agent_fell_back(
    personas, demo_version, tmp_path, django_capture_on_commit_callbacks
):
    script = tmp_path / "chatter.json"
    script.write_text(
        json.dumps(["Hello there, lovely to see you all!"] * 8)
    )  # never loads a reply skill
    endpoint = endpoint_save(
        endpoint=None,
        name="chatter",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
        script_path=str(script),
    )
    client = client_for(personas.operator)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/playground/",
            {
                "version": demo_version.pk,
                "endpoint": endpoint.pk,
                "comment": "How much is product #3?",
                "request_json": '{"id": "pg", "comments": ["x"], "room": '
                '{"current_link_id": 1, "shelf": [1, 2, 3]}}',
            },
        )
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED and job.result["trajectory"]["outcome"] == "fallback", (
        job.error
    )
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    flag = (
        '<span class="status status-fallback">Mostly fallback</span> '
        '<span class="small">1 of 1 request fell back'
    )
    assert (
        '<span id="job-outcome"><span class="fallback-flag" data-fallback="mostly">' + flag in page
    )
    assert '<span class="status" id="job-state">ran</span>' in page
    listing = client.get("/jobs/").content.decode()
    assert (
        '<td class="job-state"><span class="fallback-flag" data-fallback="mostly">' + flag
        in listing
    )


def test_the_polled_status_carries_the_title(personas):
    job = Job.objects.create(
        kind="worker_check",
        title="Worker check (5 s)",
        params={"seconds": 5},
        created_by=personas.operator,
        status=Job.FAILED,
        error="worker lost",
    )
    part = client_for(personas.operator).get(f"/jobs/{job.pk}/status/").content.decode()
    assert '<h1 id="job-title" hx-swap-oob="true">Job #' in part and "Worker check (5 s)" in part
    assert 'id="job-state">failed</span>' in part
