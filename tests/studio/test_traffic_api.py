"""The traffic API as a deployment meets it: tokens per deployment, a size cap read from the header
before the body, idempotent request ids, and 400s that name the field."""

from __future__ import annotations

import copy
import io
import json

import pytest
from django.test import Client

from studio.traffic.models import TrafficTrajectory
from studio.traffic.services import deployment_create, deployment_token_create
from studio.traffic.testing import agent_trajectories, world_cases

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def records():
    cases, catalogue = world_cases(3)
    return agent_trajectories(cases, catalogue=catalogue)


@pytest.fixture
def shop(personas):
    deployment = deployment_create(name="shop-eu", actor=personas.operator)
    _, token = deployment_token_create(deployment=deployment, actor=personas.operator)
    return deployment, token


def post(body, *, token: str | None, name: str = "shop-eu", **extra):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = body if isinstance(body, bytes) else json.dumps(body)
    return Client().post(
        f"/api/v1/deployments/{name}/trajectories/",
        data=data,
        content_type="application/json",
        **headers,
        **extra,
    )


def test_no_token_is_401(shop, records):
    response = post(records[0], token=None)
    assert response.status_code == 401
    assert "Bearer hsd_" in response.json()["error"]
    assert post(records[0], token="hsd_not-a-token").status_code == 401
    assert not TrafficTrajectory.objects.exists()


def test_another_deployments_token_is_403(shop, records, personas):
    other = deployment_create(name="shop-us", actor=personas.operator)
    _, other_token = deployment_token_create(deployment=other, actor=personas.operator)
    response = post(records[0], token=other_token)
    assert response.status_code == 403
    assert "belongs to deployment 'shop-us'" in response.json()["error"]
    assert not TrafficTrajectory.objects.exists()


def test_a_user_api_token_is_not_a_deployment_token(shop, records, personas):
    from studio.accounts.services import api_token_create

    _, user_token = api_token_create(user=personas.admin, name="ci")
    assert post(records[0], token=user_token).status_code == 401


class Unreadable(io.RawIOBase):
    """A request body that fails the test if any of it is read."""

    def read(self, *args):  # pragma: no cover - reaching it is the failure
        raise AssertionError("the body was read")

    readline = readinto = read


def test_oversized_body_is_413_before_it_is_read(shop, settings):
    from django.core.handlers.wsgi import WSGIRequest

    from studio.traffic.api import trajectories_post

    settings.TRAFFIC_MAX_BODY_BYTES = 4096
    _, token = shop
    request = WSGIRequest(
        {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/api/v1/deployments/shop-eu/trajectories/",
            "SERVER_NAME": "testserver",
            "SERVER_PORT": "80",
            "wsgi.url_scheme": "http",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(50 * 1024 * 1024),
            "HTTP_AUTHORIZATION": f"Bearer {token}",
            "wsgi.input": Unreadable(),
        }
    )
    response = trajectories_post(request, name="shop-eu")
    assert response.status_code == 413
    assert "larger than 4,096 bytes" in json.loads(response.content)["error"]


def test_oversized_body_through_the_client_is_413(shop, records, settings):
    settings.TRAFFIC_MAX_BODY_BYTES = 4096
    response = post(records, token=shop[1])
    assert response.status_code == 413
    assert not TrafficTrajectory.objects.exists()


def test_a_repeated_id_is_stored_once(shop, records):
    first = post(records[0], token=shop[1])
    assert first.status_code == 201
    assert first.json()["stored"] == [records[0]["request_id"]]
    again = post(records[:2], token=shop[1])
    assert again.status_code == 201
    assert again.json() == {
        "deployment": "shop-eu",
        "stored": [records[1]["request_id"]],
        "duplicates": [records[0]["request_id"]],
    }
    third = post(records[0], token=shop[1])
    assert third.status_code == 200 and third.json()["stored"] == []
    assert TrafficTrajectory.objects.filter(request_id=records[0]["request_id"]).count() == 1
    assert TrafficTrajectory.objects.count() == 2


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda r: r.pop("request_id"), "trajectory.request_id"),
        (
            lambda r: r.update(route="loud"),
            "trajectory.route: must be one of public, private, silent",
        ),
        (lambda r: r["request"]["comments"][0].pop("text"), "trajectory.request: comments[0].text"),
        (
            lambda r: r.update(tool_calls=[{"seq": 1}]),
            "trajectory.tool_calls[0]: missing arguments, name, round",
        ),
        (lambda r: r.update(harness="demo"), "trajectory.harness"),
        (lambda r: r.update(model={"fingerprint": 7}), "trajectory.model"),
    ],
)
def test_a_malformed_record_is_400_naming_the_field(shop, records, mutate, field):
    record = copy.deepcopy(records[0])
    mutate(record)
    response = post(record, token=shop[1])
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]
    assert any(field.split(":")[0] in p for p in response.json()["problems"])
    assert not TrafficTrajectory.objects.exists()


def test_a_bad_record_in_a_batch_stores_nothing_and_names_its_index(shop, records):
    batch = copy.deepcopy(records)
    batch[2]["outcome"] = "exploded"
    response = post(batch, token=shop[1])
    assert response.status_code == 400
    assert "trajectory[2].outcome" in response.json()["error"]
    assert not TrafficTrajectory.objects.exists()


def test_not_json_is_400(shop):
    response = post(b"{not json", token=shop[1])
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]


def test_stored_with_digest_version_and_model_fingerprint(shop, records, demo_version):
    record = dict(records[0], model={"name": "qwen-sft-3", "fingerprint": "ab" * 32})
    unknown = dict(
        copy.deepcopy(records[1]), harness={"name": "livestream-avatar", "digest": "f" * 64}
    )
    assert post([record, unknown], token=shop[1]).status_code == 201
    known = TrafficTrajectory.objects.get(request_id=records[0]["request_id"])
    assert known.harness_version == demo_version
    assert known.model_fingerprint == "ab" * 32 and known.model_name == "qwen-sft-3"
    assert known.category == records[0]["request"]["intent"]
    stranger = TrafficTrajectory.objects.get(request_id=records[1]["request_id"])
    assert stranger.harness_version is None
    assert stranger.version_label == "livestream-avatar (unknown digest ffffffffffff)"


def test_a_revoked_token_is_401(shop, records, personas):
    from studio.traffic.models import DeploymentToken
    from studio.traffic.services import deployment_token_revoke

    deployment_token_revoke(token=DeploymentToken.objects.get(), actor=personas.operator)
    assert post(records[0], token=shop[1]).status_code == 401
