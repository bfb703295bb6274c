"""Production traffic to a labelled dataset, from the browser, against a real Celery worker.

A deployment posts five trajectories through the API with its token; a reviewer filters them, queues
them and labels them from the keyboard; a second reviewer labels two of them and the queue shows
Cohen's kappa; the labels become a dataset, and an evaluation of it runs on a real worker, its page
saying that the judge has not been calibrated against human labels yet.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.services]


@pytest.fixture
def deployment_world(people, demo, tmp_path):
    from studio.accounts.roles import REVIEWER
    from studio.accounts.services import user_create
    from studio.endpoints.models import ModelEndpoint
    from studio.evolution.scripted import write_script
    from studio.traffic.services import deployment_create, deployment_token_create
    from studio.traffic.testing import agent_trajectories, world_cases
    from tests.personas import PASSWORD

    user_create(username="rhea", password=PASSWORD, roles=[REVIEWER])
    cases, catalogue = world_cases(5)
    records = agent_trajectories(cases, catalogue=catalogue)
    deployment = deployment_create(name="shop-eu", actor=people["operator"])
    _, token = deployment_token_create(deployment=deployment, actor=people["operator"])
    # the evaluation's policy: the same shortcut script, keyed by the case ids the queue gives the
    # requests
    renamed = [dict(case, id=f"shop-eu-{case['id']}") for case in cases]
    endpoint = ModelEndpoint.objects.create(
        name="shortcut",
        route=ModelEndpoint.SCRIPTED,
        script_path=str(write_script(cases=renamed, path=tmp_path / "s.json")),
    )
    return records, token, endpoint, demo


def _post(url: str, token: str, body) -> tuple[int, dict]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def _label_by_keyboard(page, accuracy: str, effectiveness_key: str) -> None:
    page.wait_for_selector("#label-form[data-keyboard=ready]")
    page.keyboard.press(accuracy)
    page.keyboard.press(effectiveness_key)
    with (
        page.expect_navigation()
    ):  # the submit's page, not the one it leaves (a goto next aborted it)
        page.keyboard.press("Enter")


def test_traffic_to_labels_to_an_evaluated_dataset(deployment_world, sign_in, live_server):
    from studio.jobs.testing import celery_worker

    records, token, endpoint, version = deployment_world
    status, answer = _post(
        f"{live_server.url}/api/v1/deployments/shop-eu/trajectories/", token, records
    )
    assert status == 201 and len(answer["stored"]) == 5
    status, answer = _post(
        f"{live_server.url}/api/v1/deployments/shop-eu/trajectories/", token, records[0]
    )
    assert status == 200 and answer["duplicates"] == [records[0]["request_id"]]

    page = sign_in("rafael")
    page.click("nav >> text=Traffic")
    assert page.locator("#traffic tbody tr[data-request]").count() == 5
    page.select_option("#traffic-filters select[name=category]", "product_qa")
    page.click("#filter-traffic")
    product_qa = page.locator("#traffic tbody tr[data-request]").count()
    assert 0 < product_qa < 5
    page.goto("/traffic/")
    for box in page.locator("#traffic input[name=trajectory]").all():
        box.check()
    page.fill("#new-queue-name", "june")
    page.click("#add-to-queue")
    page.wait_for_selector("#items")
    assert page.locator("#items tr[data-status=open]").count() == 5

    page.click("#label-next")
    for accuracy in ("1", "1", "0", "1", "1"):
        _label_by_keyboard(page, accuracy, "c")
    assert "Nothing left for you to label" in page.inner_text(".messages")
    assert page.locator("#items tr[data-status=labelled]").count() == 5
    assert "rafael: Acc 0 Eff 1.0" in page.inner_text("#items")

    second = sign_in("rhea")
    second.goto("/annotation/q/june/")
    second.click("#label-next")
    _label_by_keyboard(second, "1", "c")  # agrees with rafael on case 1
    _label_by_keyboard(second, "1", "x")  # disagrees on case 2's Effectiveness
    second.goto("/annotation/q/june/")
    agreement = second.inner_text("#agreement")
    assert "cohen's kappa" in agreement.lower()
    assert second.locator("#agreement tr[data-dimension=accuracy] .kappa").inner_text() == "1.000"
    assert second.locator("#items tr[data-status=disputed]").count() == 1
    assert second.locator("#items tr[data-status=agreed]").count() == 1

    page.goto("/annotation/q/june/")
    page.click("#export-queue")
    page.wait_for_load_state()
    assert "/evolution/datasets/june-v1/" in page.url
    assert "4 labelled case(s)" in page.inner_text(
        ".messages"
    )  # the disputed case waits for a third label

    with celery_worker():
        page.click("nav >> text=Evolution")
        page.click("#new-evolution")
        page.fill("input[name=name]", "labelled traffic")
        page.select_option("select[name=version]", str(version.pk))
        page.select_option("select[name=dataset]", "june-v1")
        page.select_option("select[name=endpoint]", str(endpoint.pk))
        page.click("#start-evolution")
        page.wait_for_selector("#step-evaluate .run-status[data-status=succeeded]", timeout=90_000)
        assert "Accuracy" in page.inner_text("#step-evaluate")
        assert (
            page.get_attribute("#judge-mark [data-judge-status]", "data-judge-status")
            == "uncalibrated"
        )
