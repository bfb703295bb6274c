"""Issue 50 findings 8, 9 and the traffic parts of 10: the traffic API's door.

8. Odd trajectory fields were 500s: ``timings.total_s`` as ``"abc"`` or ``[1]`` and
   ``hook_decisions[].hook_id: 7`` at posting; ``seq`` as a string and ``model_calls[].messages:
   ["hello"]`` stored, then the page was a 500; ``total_s: NaN`` answered 200 with ``"duplicates"``
   and stored nothing. Each is now a 400 naming the field, and a record stored before the check is
   shown as its JSON instead of a 500.
9. Deployment ``a`` request ``b-req-17`` and deployment ``a-b`` request ``req-17`` had one case id.
10. A deployment token told whether another deployment name exists (403 vs 404); a right-to-left
    override in a request id was shown as is; nothing limited how much one deployment stores.

Through the API with a deployment token and the traffic pages with the test client.
"""

from __future__ import annotations

import copy
import json

import pytest
from django.test import Client

from studio.traffic.models import TrafficTrajectory
from studio.traffic.services import deployment_create, deployment_token_create
from studio.traffic.testing import agent_trajectories, world_cases
from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def record():
    cases, catalogue = world_cases(1)
    return agent_trajectories(cases, catalogue=catalogue)[0]


@pytest.fixture
def shop(personas):
    deployment = deployment_create(name="shop-eu", actor=personas.operator)
    _, token = deployment_token_create(deployment=deployment, actor=personas.operator)
    return deployment, token


def post(body, *, token: str, name: str = "shop-eu"):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return Client().post(
        f"/api/v1/deployments/{name}/trajectories/",
        data=data,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )


def _odd(record, change) -> dict:
    odd = copy.deepcopy(record)
    odd["request_id"] = "odd-1"
    change(odd)
    return odd


def _set_timing(value):
    return lambda r: r.setdefault("timings", {}).__setitem__("total_s", value)


def _first(key, field, value):
    def change(r):
        assert r[key], f"the record has no {key}"
        r[key][0][field] = value

    return change


def _hook(r):
    r["hook_decisions"] = [
        {"seq": 1, "round": 0, "event": "pre_reply", "hook_id": 7, "type": "x", "decision": "allow"}
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_set_timing("abc"), "trajectory.timings.total_s"),
        (_set_timing([1]), "trajectory.timings.total_s"),
        (_hook, "trajectory.hook_decisions[0].hook_id"),
        (_first("model_calls", "seq", "3"), "trajectory.model_calls[0].seq"),
        (_first("model_calls", "messages", ["hello"]), "trajectory.model_calls[0].messages"),
        (_first("model_calls", "latency_s", "fast"), "trajectory.model_calls[0].latency_s"),
    ],
)
def test_odd_fields_are_a_400_naming_the_field(shop, record, change, field):
    _, token = shop
    response = post(_odd(record, change), token=token)
    assert response.status_code == 400, response.content
    problems = response.json()["problems"]
    assert any(p.startswith(field + ":") for p in problems), problems
    assert not TrafficTrajectory.objects.exists()


def test_nan_is_rejected_not_reported_as_a_duplicate(shop, record):
    _, token = shop
    body = json.dumps(_odd(record, _set_timing(float("nan"))))  # Python writes NaN, unquoted
    assert '"total_s": NaN' in body
    response = post(body, token=token)
    assert response.status_code == 400, response.content
    assert "duplicates" not in response.json()
    assert any("trajectory.timings.total_s" in p for p in response.json()["problems"])
    assert not TrafficTrajectory.objects.exists()


def test_a_good_record_is_still_stored(shop, record):
    _, token = shop
    response = post(record, token=token)
    assert response.status_code == 201 and response.json()["stored"] == [record["request_id"]]


def test_a_stored_record_with_odd_fields_is_shown_not_a_500(shop, record, personas):
    deployment, _ = shop
    odd = _odd(record, _first("model_calls", "seq", "3"))
    odd["model_calls"][0]["messages"] = ["hello"]
    row = TrafficTrajectory.objects.create(
        deployment=deployment,
        request_id="odd-1",
        harness_name="x",
        harness_digest="y",
        outcome="replied",
        route="public",
        record=odd,
    )  # stored before the door checked these fields
    response = client_for(personas.operator).get(f"/traffic/{row.pk}/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "trajectory.model_calls[0].seq: must be a whole number" in page
    assert "trajectory.model_calls[0].messages: must be a list of objects" in page


def test_case_ids_of_two_deployments_never_collide(personas):
    from studio.traffic.models import traffic_case_id

    a = traffic_case_id(deployment="a", request_id="b-req-17")
    ab = traffic_case_id(deployment="a-b", request_id="req-17")
    assert a != ab and a.startswith("a-b-req-17-") and ab.startswith("a-b-req-17-")
    long = traffic_case_id(deployment="shop", request_id="x" * 200)
    assert len(long) <= 120 and long != traffic_case_id(deployment="shop", request_id="x" * 199)
    odd = traffic_case_id(deployment="shop", request_id="a/b c?")
    assert set(odd) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")


def test_one_deployments_trajectory_does_not_hide_anothers_in_a_queue(personas, record):
    from studio.annotation.models import AnnotationQueue
    from studio.annotation.services import queue_add_traffic, queue_create

    rows = []
    for name, request_id in (("a", "b-req-17"), ("a-b", "req-17")):
        deployment = deployment_create(name=name, actor=personas.operator)
        rows.append(
            TrafficTrajectory.objects.create(
                deployment=deployment,
                request_id=request_id,
                harness_name="x",
                harness_digest="y",
                outcome="replied",
                route="public",
                record={**record, "request_id": request_id},
            )
        )
    queue = queue_create(name="q", actor=personas.reviewer)
    assert isinstance(queue, AnnotationQueue)
    added = queue_add_traffic(queue=queue, trajectories=rows, actor=personas.reviewer)
    assert added == 2


def test_a_token_does_not_tell_which_other_deployments_exist(shop, record, personas):
    _, token = shop
    deployment_create(name="shop-us", actor=personas.operator)
    existing = post(record, token=token, name="shop-us")
    missing = post(record, token=token, name="no-such-shop")
    assert existing.status_code == missing.status_code == 403
    assert existing.json()["error"].replace("shop-us", "X") == missing.json()["error"].replace(
        "no-such-shop", "X"
    )
    assert "no-such-shop" not in missing.json()["error"]


def test_a_right_to_left_override_is_refused_and_shown_visible(shop, record, personas):
    deployment, token = shop
    sneaky = "req-\u202e71-qer"
    response = post({**record, "request_id": sneaky}, token=token)
    assert response.status_code == 400
    assert any("trajectory.request_id" in p and "U+202E" in p for p in response.json()["problems"])
    row = TrafficTrajectory.objects.create(
        deployment=deployment,
        request_id=sneaky,
        harness_name="x",
        harness_digest="y",
        outcome="replied",
        route="public",
        record={**record, "request_id": sneaky},
    )  # stored before the door refused it
    client = client_for(personas.operator)
    for url in ("/traffic/", f"/traffic/{row.pk}/"):
        page = client.get(url).content.decode()
        assert "\u202e" not in page and "req-&lt;U+202E&gt;71-qer" in page, url


def test_a_deployment_stores_at_most_its_hourly_limit(shop, record, settings):
    _, token = shop
    settings.TRAFFIC_MAX_RECORDS_PER_HOUR = 3
    batch = [{**record, "request_id": f"r-{i}"} for i in range(3)]
    assert post(batch, token=token).status_code == 201
    refused = post({**record, "request_id": "r-3"}, token=token)
    assert refused.status_code == 429
    assert "TRAFFIC_MAX_RECORDS_PER_HOUR (3)" in refused.json()["error"]
    assert 1 <= int(refused["Retry-After"]) <= 3600
    assert TrafficTrajectory.objects.count() == 3
