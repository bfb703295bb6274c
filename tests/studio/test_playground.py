"""Playground: a request runs as a job under a version and a policy; the page shows each step."""

from __future__ import annotations

from pathlib import Path

import pytest
from studio_testing import client_for

from studio.endpoints.services import endpoint_save
from studio.jobs.models import Job

pytestmark = pytest.mark.django_db
SCRIPT = Path(__file__).parent / "testdata" / "price.script.json"


@pytest.fixture
def scripted_endpoint(personas):
    return endpoint_save(
        endpoint=None, name="scripted-price", route="scripted", base_url="", model="", api_key_env="",
        description="", actor=personas.ml_engineer, script_path=str(SCRIPT),
    )


def test_a_playground_run_shows_the_trajectory_step_by_step(personas, demo_version, scripted_endpoint, django_capture_on_commit_callbacks):
    client = client_for(personas.operator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/playground/",
            {"version": demo_version.pk, "endpoint": scripted_endpoint.pk, "comment": "How much is product #3?",
             "request_json": '{"id": "pg", "comments": ["x"], "room": {"current_link_id": 1, "shelf": [1, 2, 3, 4, 5]}}'},
            follow=True,
        )
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail
    page = response.content.decode() if job.is_active else client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Link 3 is the Sunscreen SPF50, currently 89 yuan." in page
    assert "tool get_product_info_by_link_id" in page and "load skill item_qa" in page
    assert "model call (round 1)" in page and "hook " in page
    assert "Prompt blocks" in page and "Assembled system prompt" in page
    assert 'id="trajectory-timings"' in page and "total " in page
    # the steps appear in the order they happened
    assert page.index("tool get_product_info_by_link_id") < page.index("load skill item_qa")


def test_a_bad_request_is_refused_with_the_field_named(personas, demo_version, scripted_endpoint):
    response = client_for(personas.operator).post(
        "/playground/",
        {"version": demo_version.pk, "endpoint": scripted_endpoint.pk, "request_json": '{"comments": [], "room": {"current_link_id": 0}}'},
    )
    page = response.content.decode()
    assert response.status_code == 200 and "comments" in page and "current_link_id" in page
    assert not Job.objects.exists()
