"""Issue 28 item 1: a worker's environment cannot be sent anywhere.

An ML engineer once created an OpenAI-compatible endpoint pointing at their own server with
``api_key_env=REDIS_URL`` and pressed "test": the worker sent ``Authorization: Bearer redis://...``.
Keys are now endpoint secrets an admin registers (a stored value, or a worker variable the admin
names), referenced by name and never shown back. Through the studio's views with the personas and
a real Celery worker whose environment holds REDIS_URL, talking to a real HTTP server that records
every Authorization header it is sent.
"""

from __future__ import annotations

import json

import pytest

from studio.endpoints.models import ModelEndpoint
from studio.endpoints.services import url_origin
from studio.jobs.models import Job
from studio.jobs.testing import celery_worker, redis_url, wait_for
from tests.studio.studio_testing import client_for

SECRET = "sk-vendor-THIS-MUST-NEVER-BE-SHOWN-42"
WORKER_SECRET = "sk-worker-ONLY-IN-THE-WORKERS-ENV-7"


@pytest.fixture
def attacker_server(fake_openai):
    """Somebody's own OpenAI-compatible server, recording every Authorization header it receives."""
    return fake_openai.url


def _endpoint_form(base_url: str, **fields) -> dict:
    return {
        "name": "mine",
        "route": "openai",
        "base_url": base_url,
        "model": "demo-model",
        "description": "",
        "api_key_secret": "",
        **fields,
    }


def _test_on_the_worker(client, endpoint: ModelEndpoint) -> Job:
    """Press "Test connection" and wait for the worker to finish the job."""
    assert client.post(f"/endpoints/{endpoint.pk}/test/").status_code == 302
    job = Job.objects.filter(kind="endpoint_test").latest("pk")

    def finished():
        job.refresh_from_db()
        return job.status in (Job.SUCCEEDED, Job.FAILED)

    wait_for(finished, timeout=60, what=f"the endpoint test job #{job.pk} to finish on the worker")
    return job


@pytest.mark.usefixtures("loopback_is_public")
@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_an_endpoint_cannot_send_a_variable_of_the_workers_environment(
    personas, fake_openai, attacker_server
):
    mei = client_for(personas.ml_engineer)
    refused = mei.post(
        "/endpoints/new/",
        _endpoint_form(attacker_server, api_key_env="REDIS_URL", api_key_secret="REDIS_URL"),
    )
    page = refused.content.decode()
    assert refused.status_code == 400 and "api_key_secret: " in page and "registered" in page
    assert not ModelEndpoint.objects.filter(name="mine").exists()

    # the old field alone is no longer read: the endpoint is keyless, and the worker sends nothing
    assert (
        mei.post(
            "/endpoints/new/", _endpoint_form(attacker_server, api_key_env="REDIS_URL")
        ).status_code
        == 302
    )
    endpoint = ModelEndpoint.objects.get(name="mine")
    with celery_worker():
        job = _test_on_the_worker(mei, endpoint)
    assert job.status == Job.SUCCEEDED, job.error
    assert fake_openai.authorizations and redis_url() not in json.dumps(fake_openai.authorizations)
    assert all("redis://" not in header for header in fake_openai.authorizations)


@pytest.mark.usefixtures("loopback_is_public")
@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_an_admin_registers_secrets_that_endpoints_name_and_no_page_shows(
    personas, fake_openai, attacker_server
):
    from studio.endpoints.models import EndpointSecret

    admin, mei = client_for(personas.admin), client_for(personas.ml_engineer)
    for who in (personas.ml_engineer, personas.operator, personas.reviewer):
        assert client_for(who).get("/endpoints/secrets/").status_code == 403
        assert (
            client_for(who).post("/endpoints/secrets/new/", {"name": "x", "value": "y"}).status_code
            == 403
        )
    origin = url_origin(
        url=attacker_server
    )  # here the engineer's server is the host the admin bound the keys to
    assert (
        admin.post(
            "/endpoints/secrets/new/",
            {
                "name": "vendor-key",
                "value": SECRET,
                "from_env": "",
                "allowed_origins": origin,
                "description": "the vendor's API key",
            },
        ).status_code
        == 302
    )
    assert (
        admin.post(
            "/endpoints/secrets/new/",
            {
                "name": "worker-key",
                "value": "",
                "from_env": "HS_WORKER_KEY",
                "allowed_origins": origin,
                "description": "set on the GPU workers",
            },
        ).status_code
        == 302
    )
    both = admin.post(
        "/endpoints/secrets/new/",
        {
            "name": "both",
            "value": "v",
            "from_env": "X",
            "description": "",
            "allowed_origins": origin,
        },
    )
    assert both.status_code == 400 and "either" in both.content.decode()
    secret = EndpointSecret.objects.get(name="vendor-key")
    # editing without a value keeps the stored one (it is never put back into the form)
    form = admin.get(f"/endpoints/secrets/{secret.pk}/edit/").content.decode()
    assert SECRET not in form
    assert (
        admin.post(
            f"/endpoints/secrets/{secret.pk}/edit/",
            {
                "name": "vendor-key",
                "value": "",
                "from_env": "",
                "allowed_origins": origin,
                "description": "renamed",
            },
        ).status_code
        == 302
    )
    secret.refresh_from_db()
    assert secret.plain_value() == SECRET and secret.description == "renamed"

    assert (
        mei.post(
            "/endpoints/new/", _endpoint_form(attacker_server, api_key_secret="vendor-key")
        ).status_code
        == 302
    )
    assert (
        mei.post(
            "/endpoints/new/",
            _endpoint_form(attacker_server, name="from-env", api_key_secret="worker-key"),
        ).status_code
        == 302
    )
    vendor, from_env = (
        ModelEndpoint.objects.get(name="mine"),
        ModelEndpoint.objects.get(name="from-env"),
    )
    with celery_worker(extra_env={"HS_WORKER_KEY": WORKER_SECRET}):
        jobs = [_test_on_the_worker(mei, vendor), _test_on_the_worker(mei, from_env)]
    assert [job.status for job in jobs] == [Job.SUCCEEDED, Job.SUCCEEDED], [
        job.error for job in jobs
    ]
    assert fake_openai.authorizations == [f"Bearer {SECRET}", f"Bearer {WORKER_SECRET}"]
    for client, url in [
        (mei, "/endpoints/"),
        (mei, f"/endpoints/{vendor.pk}/edit/"),
        (mei, f"/jobs/{jobs[0].pk}/"),
        (mei, "/audit/"),
        (admin, "/endpoints/secrets/"),
        (admin, "/audit/"),
        (admin, f"/endpoints/secrets/{secret.pk}/edit/"),
        (mei, "/playground/"),
    ]:
        page = client.get(url).content.decode()
        assert SECRET not in page and WORKER_SECRET not in page, url
    assert "vendor-key" in mei.get("/endpoints/").content.decode()  # referenced by name
    in_use = admin.post(f"/endpoints/secrets/{secret.pk}/delete/")
    assert in_use.status_code == 400 and "mine" in in_use.content.decode()
    assert EndpointSecret.objects.filter(pk=secret.pk).exists()
