"""Annotation as people use it: traffic and runs feed a queue, labels carry who and when, two
labellers' agreement is Cohen's kappa, a disagreement waits for a third label, and the settled
labels become a versioned dataset whose human labels calibrate a judge."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from studio_testing import client_for, page_text

from studio.accounts.roles import REVIEWER
from studio.accounts.services import user_create
from studio.annotation.models import AnnotationQueue, CaseLabel, JudgeCalibration
from studio.annotation.selectors import item_settled, item_status, queue_agreement, queue_next_item
from studio.traffic.models import TrafficTrajectory
from studio.traffic.services import deployment_create, traffic_ingest
from studio.traffic.testing import agent_trajectories, world_cases

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def records():
    cases, catalogue = world_cases(4)
    return agent_trajectories(cases, catalogue=catalogue)


@pytest.fixture
def traffic(personas, records):
    deployment = deployment_create(name="shop-eu", actor=personas.operator)
    traffic_ingest(deployment=deployment, records=records)
    return list(TrafficTrajectory.objects.order_by("received_at", "pk"))


@pytest.fixture
def second_reviewer(personas) -> User:
    return user_create(username="rhea", password="correct horse battery staple", roles=[REVIEWER])


def _label(client, queue: str, position: int, **values):
    data = {
        "accuracy": "1",
        "effectiveness": "1",
        "category": "product_qa",
        "route": "public",
        "reply_skills": "item_qa",
        "tools": "get_product_info_by_link_id",
        "note": "",
    } | values
    return client.post(f"/annotation/q/{queue}/items/{position}/", data)


def test_traffic_becomes_cases_and_labels_carry_labeller_and_time(traffic, personas, records):
    reviewer = client_for(personas.reviewer)
    response = reviewer.post(
        "/annotation/add/traffic/", {"trajectory": [t.pk for t in traffic], "new_queue": "june"}
    )
    assert response.status_code == 302 and response.url == "/annotation/q/june/"
    queue = AnnotationQueue.objects.get(name="june")
    item = queue.items.get(position=1)
    assert item.case["comments"] == records[0]["request"]["comments"]
    assert item.case["gold"] == {"route": records[0]["route"]} and item.reply == records[0]["reply"]

    page = reviewer.get("/annotation/q/june/next/", follow=True)
    assert page.request["PATH_INFO"] == "/annotation/q/june/items/1/"
    text = page_text(page)
    assert "Product facts" in text and records[0]["reply"][:30] in text
    assert 'src="/static/annotation/label.js"' in page.content.decode()

    saved = _label(reviewer, "june", 1, note="price right")
    assert saved.status_code == 302 and saved.url == "/annotation/q/june/next/"
    label = CaseLabel.objects.get()
    assert (
        label.labeller == personas.reviewer
        and label.created_at is not None
        and label.note == "price right"
    )
    assert "rafael: Acc 1 Eff 1.0" in page_text(reviewer.get("/annotation/q/june/"))


def test_a_bad_label_is_a_400_naming_the_field(traffic, personas):
    reviewer = client_for(personas.reviewer)
    reviewer.post("/annotation/add/traffic/", {"trajectory": [traffic[0].pk], "new_queue": "june"})
    for values, field in (
        ({"effectiveness": "0.7"}, "effectiveness: 0, 0.5 or 1"),
        ({"accuracy": ""}, "accuracy: 1 when"),
        ({"category": "gossip"}, "category: one of"),
        ({"tools": "../etc"}, "tools: '../etc' is not a name"),
    ):
        response = _label(reviewer, "june", 1, **values)
        assert response.status_code == 400
        assert field in page_text(response)
    assert not CaseLabel.objects.exists()


def test_only_labellers_label(traffic, personas):
    client_for(personas.reviewer).post(
        "/annotation/add/traffic/", {"trajectory": [traffic[0].pk], "new_queue": "q"}
    )
    for user in (personas.ml_engineer, personas.outsider):
        assert _label(client_for(user), "q", 1).status_code == 403
    assert client_for(personas.ml_engineer).get("/annotation/q/q/").status_code == 200
    assert _label(client_for(personas.operator), "q", 1).status_code == 302  # operators label too


def test_two_labellers_kappa_and_a_disagreement_back_in_the_queue(
    traffic, personas, second_reviewer
):
    first, second = client_for(personas.reviewer), client_for(second_reviewer)
    first.post(
        "/annotation/add/traffic/", {"trajectory": [t.pk for t in traffic], "new_queue": "june"}
    )
    for position, acc in ((1, "1"), (2, "0"), (3, "1"), (4, "0")):
        _label(first, "june", position, accuracy=acc)
    queue = AnnotationQueue.objects.get(name="june")
    assert queue_next_item(queue=queue, user=personas.reviewer) is None
    assert queue_next_item(queue=queue, user=second_reviewer).position == 1  # a second opinion
    _label(second, "june", 1, accuracy="1")
    _label(second, "june", 2, accuracy="1")  # disagrees with the first on Accuracy
    _label(second, "june", 3, accuracy="1", effectiveness="0.5")  # disagrees on Effectiveness
    _label(second, "june", 4, accuracy="0")

    agreement = queue_agreement(queue=queue)
    assert agreement.n == 4
    assert agreement.accuracy.agreement == 0.75 and agreement.accuracy.kappa == pytest.approx(0.5)
    assert agreement.effectiveness.agreement == 0.75
    page = page_text(client_for(personas.reviewer).get("/annotation/q/june/"))
    assert "Cohen's kappa" in page and "0.500" in page

    disputed = queue.items.get(position=2)
    assert item_status(item=disputed) == "disputed" and item_settled(item=disputed) is None
    third = client_for(personas.admin)
    assert queue_next_item(queue=queue, user=personas.admin).position == 2  # disputed first
    _label(third, "june", 2, accuracy="0")
    assert item_status(item=disputed) == "settled" and item_settled(item=disputed)["accuracy"] == 0


def test_export_makes_a_versioned_dataset_with_human_labels_that_calibrates_a_judge(
    traffic, personas, django_capture_on_commit_callbacks
):
    from studio.evolution.models import Dataset

    reviewer = client_for(personas.reviewer)
    reviewer.post(
        "/annotation/add/traffic/", {"trajectory": [t.pk for t in traffic], "new_queue": "june"}
    )
    for position in (1, 2, 3):
        _label(reviewer, "june", position, accuracy="1", effectiveness="1")
    response = reviewer.post("/annotation/q/june/export/")
    assert response.status_code == 302 and response.url == "/evolution/datasets/june-v1/"
    dataset = Dataset.objects.get(name="june-v1")
    assert dataset.case_count == 3  # the unlabelled fourth is left out
    case = dataset.cases.get(position=1).data
    assert case["gold"]["reply_skills"] == ["item_qa"]
    assert case["gold"]["tool_calls"] == [{"name": "get_product_info_by_link_id"}]
    assert case["candidates"][0]["human"] == {"accuracy": 1, "effectiveness": 1.0}
    assert case["candidates"][0]["trajectory"]["request_id"] == traffic[0].request_id
    _label(reviewer, "june", 4)
    reviewer.post("/annotation/q/june/export/")
    assert Dataset.objects.get(name="june-v2").case_count == 4

    # four replies cannot decide a calibration (tests/studio/test_calibration_sets.py calibrates)
    with django_capture_on_commit_callbacks(execute=True):
        start = client_for(personas.ml_engineer).post(
            "/annotation/calibrations/start/",
            {"judge": "programmatic", "dataset": "june-v2"},
            follow=True,
        )
    text = page_text(start)
    assert "june-v2 cannot decide a calibration: 4 labelled replies" in text
    assert "no labelled reply of the categories" in text
    assert not JudgeCalibration.objects.exists()


def test_a_queue_from_a_runs_failing_cases_and_from_a_dataset(personas):
    from studio.evolution.services.datasets import dataset_import

    cases, catalogue = world_cases(5)
    dataset_import(
        name="dev-5",
        text="\n".join(json.dumps(c) for c in cases),
        source="dev.jsonl",
        actor=personas.admin,
        catalogue=catalogue.to_dict(),
    )
    reviewer = client_for(personas.reviewer)
    response = reviewer.post("/annotation/add/", {"dataset": "dev-5", "new_queue": "from-dev"})
    assert response.status_code == 302
    queue = AnnotationQueue.objects.get(name="from-dev")
    assert queue.items.count() == 5 and queue.catalogue == catalogue.to_dict()
    assert queue.items.get(position=1).reply == cases[0]["candidates"][0]["reply"]
    missing = reviewer.post("/annotation/add/", {"run": "999", "new_queue": "x"}, follow=True)
    assert "run: no evaluation run #999" in page_text(missing)


def test_calibration_refuses_a_bad_judge_and_a_set_without_labels(personas):
    from studio.evolution.services.datasets import dataset_import

    cases, _ = world_cases(2)
    for case in cases:
        case.pop("candidates", None)
    dataset_import(
        name="bare", text="\n".join(json.dumps(c) for c in cases), source="x.jsonl", actor=None
    )
    client = client_for(personas.ml_engineer)
    page = page_text(
        client.post(
            "/annotation/calibrations/start/", {"judge": "oracle", "dataset": "bare"}, follow=True
        )
    )
    assert "judge: one of programmatic" in page and "got 'oracle'" in page
    page = page_text(
        client.post(
            "/annotation/calibrations/start/",
            {"judge": "programmatic", "dataset": "bare"},
            follow=True,
        )
    )
    assert "bare was not labelled by people in an annotation queue" in page
    assert not JudgeCalibration.objects.exists()


def test_a_feed_or_a_calibration_that_cannot_be_read_names_the_field(personas):
    reviewer = client_for(personas.reviewer)
    page = page_text(
        reviewer.post("/annotation/add/", {"run": "12x", "new_queue": "x"}, follow=True)
    )
    assert "run: expected a whole number, got '12x'" in page
    page = page_text(
        reviewer.post("/annotation/add/", {"dataset": "nope", "new_queue": "x"}, follow=True)
    )
    assert "dataset: no dataset named 'nope'" in page
    page = page_text(
        client_for(personas.ml_engineer).post(
            "/annotation/calibrations/start/",
            {"judge": "programmatic", "dataset": "nope"},
            follow=True,
        )
    )
    assert "dataset: no dataset named 'nope'" in page and not JudgeCalibration.objects.exists()
    assert not AnnotationQueue.objects.exists()
