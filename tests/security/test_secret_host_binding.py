"""Issue 41 item 2: a secret is sent only to the hosts an admin bound it to; stored values are
encrypted.

An ML engineer created an endpoint whose ``base_url`` was their own server, picked an admin's secret
(``sectest-vendor``) and pressed Test: their server received ``Bearer <the secret>``. A secret now
lists the origins (scheme, host, port) it may be sent to: an endpoint elsewhere is refused on save,
naming the secret and the host, and the worker checks again before it sends (an endpoint row changed
behind the form's back sends nothing). Through the studio's views, a real Celery worker and two
listening servers: the vendor's and the engineer's own.
"""

from __future__ import annotations

import sqlite3

import pytest
from django.conf import settings
from django.db import connection

from studio.endpoints.models import EndpointSecret, ModelEndpoint
from studio.endpoints.services import url_origin
from studio.jobs.models import Job
from studio.jobs.testing import celery_worker, wait_for
from tests.fake_openai import FakeOpenAI
from tests.studio.studio_testing import client_for

SECRET = "sk-sectest-vendor-ONLY-FOR-THE-VENDOR-41"


@pytest.fixture
def vendor():
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def attacker():
    with FakeOpenAI() as server:
        yield server


def _register(admin, vendor_url: str, **fields):
    return admin.post(
        "/endpoints/secrets/new/",
        {
            "name": "sectest-vendor",
            "value": SECRET,
            "from_env": "",
            "description": "the vendor's key",
            "allowed_origins": url_origin(url=vendor_url),
            **fields,
        },
    )


def _endpoint(client, base_url: str, name: str = "mine"):
    return client.post(
        "/endpoints/new/",
        {
            "name": name,
            "route": "openai",
            "base_url": base_url,
            "model": "demo-model",
            "api_key_secret": "sectest-vendor",
            "description": "",
        },
    )


def _test_on_the_worker(client, endpoint: ModelEndpoint) -> Job:
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
def test_a_secret_goes_only_to_the_hosts_it_was_made_for(personas, vendor, attacker):
    admin, mei = client_for(personas.admin), client_for(personas.ml_engineer)
    unbound = _register(admin, vendor.url, allowed_origins="")
    assert (
        unbound.status_code == 400
        and "allowed_origins: the origins this key may be sent to" in unbound.content.decode()
    )
    not_an_origin = _register(admin, vendor.url, allowed_origins="ftp://vendor.example/path")
    assert not_an_origin.status_code == 400 and "is not an origin" in not_an_origin.content.decode()
    assert _register(admin, vendor.url).status_code == 302

    refused = _endpoint(mei, attacker.url)
    page = refused.content.decode()
    assert refused.status_code == 400, page[:500]
    assert (
        f"endpoint secret sectest-vendor may be sent only to {url_origin(url=vendor.url)}, not to "
        f"{url_origin(url=attacker.url)}"
    ) in page
    assert not ModelEndpoint.objects.filter(name="mine").exists()

    assert _endpoint(mei, vendor.url).status_code == 302
    endpoint = ModelEndpoint.objects.get(name="mine")
    # the row is pointed at the engineer's server behind the form's back (a direct write, an old
    # row)
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=attacker.url)
    with celery_worker():
        moved = _test_on_the_worker(mei, endpoint)
        ModelEndpoint.objects.filter(pk=endpoint.pk).update(base_url=vendor.url)
        home = _test_on_the_worker(mei, endpoint)
    assert attacker.requests == []  # nothing was sent there at all
    assert moved.status == Job.FAILED
    assert (
        f"endpoint mine: api_key_secret: endpoint secret sectest-vendor may be sent only to "
        f"{url_origin(url=vendor.url)}, not to {url_origin(url=attacker.url)}"
    ) in moved.error
    assert home.status == Job.SUCCEEDED, home.error
    assert vendor.authorizations == [f"Bearer {SECRET}"]


@pytest.mark.django_db
def test_a_stored_value_is_encrypted_with_a_key_outside_the_database(personas):
    admin = client_for(personas.admin)
    assert _register(admin, "https://api.vendor.example/v1").status_code == 302
    secret = EndpointSecret.objects.get(name="sectest-vendor")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT value FROM endpoints_endpointsecret WHERE name = %s", ["sectest-vendor"]
        )
        (stored,) = cursor.fetchone()
    assert stored.startswith("fernet:") and SECRET not in stored
    assert secret.plain_value() == SECRET
    key_file = settings.VAR_DIR / "endpoint-secrets.key"
    if not settings.ENDPOINT_SECRETS_KEY:
        assert key_file.stat().st_mode & 0o777 == 0o600
    if connection.vendor == "sqlite":  # the database file alone does not hold the key
        database = sqlite3.connect(connection.settings_dict["NAME"])
        assert SECRET not in str(
            database.execute("SELECT value FROM endpoints_endpointsecret").fetchall()
        )


@pytest.mark.django_db
def test_in_production_a_missing_encryption_key_refuses_the_secret_and_stores_nothing(
    personas, settings, tmp_path
):
    settings.PRODUCTION, settings.ENDPOINT_SECRETS_KEY, settings.VAR_DIR = True, "", tmp_path
    refused = _register(client_for(personas.admin), "https://api.vendor.example/v1")
    page = refused.content.decode()
    assert refused.status_code == 400
    assert "value: the studio cannot encrypt keys: ENDPOINT_SECRETS_KEY is not set" in page
    assert not EndpointSecret.objects.exists() and not (tmp_path / "endpoint-secrets.key").exists()
