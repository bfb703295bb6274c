"""Model endpoints: keys are endpoint secrets an admin registers, never on a page; the connection
test really connects (tests/security/test_endpoint_secrets.py drives the same through a real
worker)."""

from __future__ import annotations

import pytest
from studio_testing import client_for

from studio.endpoints.models import EndpointSecret, ModelEndpoint
from studio.endpoints.services import EndpointError, endpoint_save, url_origin
from studio.jobs.models import Job

pytestmark = pytest.mark.django_db
SECRET = "sk-test-THIS-MUST-NEVER-BE-RENDERED-123"


@pytest.fixture
def fake_openai_server(fake_openai):
    return fake_openai.url


def _create(client, **fields):
    data = {
        "name": "remote",
        "route": "openai",
        "base_url": "",
        "model": "demo-model",
        "api_key_secret": "",
        "description": "",
    }
    return client.post("/endpoints/new/", {**data, **fields})


def test_a_pasted_key_is_refused_and_never_echoed(personas):
    client = client_for(personas.ml_engineer)
    response = _create(client, base_url="http://127.0.0.1:1/v1", api_key_secret=SECRET)
    assert response.status_code == 400
    page = response.content.decode()
    assert (
        "api_key_secret: " in page
        and "not a registered endpoint secret" in page
        and SECRET not in page
    )
    assert not ModelEndpoint.objects.filter(name="remote").exists()


@pytest.mark.usefixtures("loopback_is_public")
def test_keys_come_from_a_registered_secret_and_never_reach_a_page(
    personas, fake_openai, fake_openai_server, django_capture_on_commit_callbacks
):
    EndpointSecret.objects.create(
        name="vendor", value=SECRET, allowed_origins=url_origin(url=fake_openai_server)
    )
    client = client_for(personas.ml_engineer)
    assert _create(client, base_url=fake_openai_server, api_key_secret="vendor").status_code == 302
    endpoint = ModelEndpoint.objects.get(name="remote")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/endpoints/{endpoint.pk}/test/", follow=True)
    job = Job.objects.get(kind="endpoint_test")
    assert job.status == Job.SUCCEEDED, job.error
    assert fake_openai.authorizations[-1] == f"Bearer {SECRET}"  # the worker used the key ...
    endpoint.refresh_from_db()
    assert endpoint.last_check_ok is True and "1 model(s)" in endpoint.last_check_message
    for url in [
        "/endpoints/",
        f"/endpoints/{endpoint.pk}/edit/",
        f"/jobs/{job.pk}/",
        "/audit/",
        "/playground/",
    ]:
        page = client.get(url).content.decode()
        assert SECRET not in page, url  # ... and no page ever shows it
    assert SECRET not in response.content.decode()


@pytest.mark.usefixtures("loopback_is_public")
def test_a_secret_whose_variable_is_unset_fails_the_test_with_its_name(
    personas, monkeypatch, fake_openai_server, django_capture_on_commit_callbacks
):
    monkeypatch.delenv("HS_MISSING_KEY", raising=False)
    EndpointSecret.objects.create(
        name="missing",
        from_env="HS_MISSING_KEY",
        allowed_origins=url_origin(url=fake_openai_server),
    )
    endpoint = endpoint_save(
        endpoint=None,
        name="nokey",
        route="openai",
        base_url=fake_openai_server,
        model="demo-model",
        api_key_secret="missing",
        description="",
        actor=personas.ml_engineer,
    )
    with django_capture_on_commit_callbacks(execute=True):
        client_for(personas.ml_engineer).post(f"/endpoints/{endpoint.pk}/test/")
    job = Job.objects.get(kind="endpoint_test")
    assert (
        job.status == Job.FAILED
        and "endpoint secret missing has no key on this worker" in job.error
    )


@pytest.mark.usefixtures("loopback_is_public")
def test_an_unknown_model_name_fails_the_connection_test(
    personas, fake_openai_server, django_capture_on_commit_callbacks
):
    endpoint = endpoint_save(
        endpoint=None,
        name="wrongmodel",
        route="openai",
        base_url=fake_openai_server,
        model="other",
        description="",
        actor=personas.ml_engineer,
    )
    with django_capture_on_commit_callbacks(execute=True):
        client_for(personas.ml_engineer).post(f"/endpoints/{endpoint.pk}/test/")
    assert "does not list model 'other'" in Job.objects.get(kind="endpoint_test").error


def test_field_errors_name_the_field(personas):
    with pytest.raises(EndpointError) as caught:
        endpoint_save(
            endpoint=None,
            name="Bad Name",
            route="openai",
            base_url="ftp://x",
            model="",
            api_key_secret="lower",
            description="",
            actor=personas.ml_engineer,
        )
    message = str(caught.value)
    for field in ("name:", "base_url:", "model:", "api_key_secret:"):
        assert field in message


def test_a_local_endpoint_can_serve_a_checkpoint_folder(
    personas, tmp_path, django_capture_on_commit_callbacks
):
    from harness.model_cache import tiny_model_dir

    client = client_for(personas.ml_engineer)
    relative = client.post(
        "/endpoints/new/",
        {
            "name": "trained",
            "route": "local",
            "base_url": "",
            "model": "runs/hsa-sft/final",
            "api_key_secret": "",
            "description": "",
        },
    )
    assert (
        relative.status_code == 400
        and "absolute path of a checkpoint folder" in relative.content.decode()
    )
    assert not ModelEndpoint.objects.filter(name="trained").exists()

    folder = str(tiny_model_dir())
    data = {
        "name": "trained",
        "route": "local",
        "base_url": "",
        "model": folder,
        "api_key_secret": "",
        "description": "a training run's final checkpoint",
    }
    assert client.post("/endpoints/new/", data).status_code == 302
    endpoint = ModelEndpoint.objects.get(name="trained")
    assert endpoint.policy_spec == f"local:{folder}"
    assert folder in client.get("/endpoints/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/endpoints/{endpoint.pk}/test/")
    endpoint.refresh_from_db()
    assert endpoint.last_check_ok is True and folder in endpoint.last_check_message

    with pytest.raises(EndpointError, match=f"model: {tmp_path} has no config.json"):
        endpoint_save(
            endpoint=None,
            name="empty",
            route="local",
            base_url="",
            model=str(tmp_path),
            description="",
            actor=personas.ml_engineer,
        )


def test_the_default_local_endpoint_keeps_the_plain_route(personas):
    endpoint = endpoint_save(
        endpoint=None,
        name="cpu",
        route="local",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
    )
    assert endpoint.policy_spec == "local"
