"""Who labels and in which words: annotators and operators label beside reviewers and admins (so the
demo's dispute between two labellers gets its third label), and every request intent the project
knows (examples/requests/, the generator's categories) pre-fills the label form's category, so
saving the form as shown works."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from studio_testing import client_for, page_text

from evaluation.cases import CATEGORIES, category_of_intent
from evaluation.world.sets import INTENT_MIX
from studio.accounts.roles import ANNOTATOR
from studio.accounts.services import user_create
from studio.annotation.models import AnnotationQueue, CaseLabel
from studio.annotation.selectors import DISPUTED, SETTLED, item_status, queue_next_item
from studio.traffic.models import TrafficTrajectory
from studio.traffic.services import deployment_create, traffic_ingest
from studio.traffic.testing import agent_trajectories, world_cases

pytestmark = pytest.mark.django_db

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "requests"
EXAMPLE_INTENTS = sorted({json.loads(p.read_text())["intent"] for p in EXAMPLES.glob("*.json")})


@pytest.fixture
def annotator() -> User:
    return user_create(username="lena", password="correct horse battery staple", roles=[ANNOTATOR])


@pytest.mark.parametrize("intent", EXAMPLE_INTENTS + sorted(INTENT_MIX))
def test_every_known_intent_has_a_category(intent):
    assert category_of_intent(intent) in CATEGORIES
    if intent in INTENT_MIX:  # the generator's cases carry the categories themselves
        assert category_of_intent(intent) == intent


def test_an_unknown_intent_has_no_category():
    assert category_of_intent("weather_report") == "" and category_of_intent(None) == ""


@pytest.fixture
def intent_traffic(personas):
    """One trajectory per example intent, as a deployment that sends intents posts them."""
    cases, catalogue = world_cases(len(EXAMPLE_INTENTS))
    records = agent_trajectories(cases, catalogue=catalogue)
    for record, intent in zip(records, EXAMPLE_INTENTS, strict=True):
        record["request"]["intent"] = intent
    deployment = deployment_create(name="shop-eu", actor=personas.operator)
    traffic_ingest(deployment=deployment, records=records)
    return list(TrafficTrajectory.objects.order_by("received_at", "pk"))


def _shown_values(page) -> dict[str, str]:
    """The label form's fields as the page fills them (what Enter submits)."""
    html = page.content.decode()
    form = html[html.index('id="label-form"') :]
    values = dict(re.findall(r'<input[^>]*name="(\w+)"[^>]*value="([^"]*)"', form))
    for name in ("category", "route"):
        select = re.search(rf'<select name="{name}".*?</select>', form, re.S).group(0)
        chosen = re.search(r'<option value="([^"]*)"\s*selected', select)
        values[name] = chosen.group(1) if chosen else ""
    return values


def test_the_form_as_shown_saves_for_every_example_intent(intent_traffic, annotator):
    client = client_for(annotator)
    added = client.post(
        "/annotation/add/traffic/",
        {"trajectory": [t.pk for t in intent_traffic], "new_queue": "intents"},
    )
    assert added.status_code == 302
    queue = AnnotationQueue.objects.get(name="intents")
    for item in queue.items.order_by("position"):
        intent = item.trajectory["request"]["intent"]
        page = client.get(f"/annotation/q/intents/items/{item.position}/")
        shown = _shown_values(page)
        assert shown["category"] == category_of_intent(intent), intent
        saved = client.post(
            f"/annotation/q/intents/items/{item.position}/",
            {**shown, "accuracy": "1", "effectiveness": "1", "note": ""},
        )
        assert saved.status_code == 302, (intent, page_text(saved)[:300])
    assert CaseLabel.objects.filter(labeller=annotator).count() == len(EXAMPLE_INTENTS)


def test_annotators_and_operators_label_ml_engineers_and_outsiders_do_not(
    intent_traffic, personas, annotator
):
    client_for(personas.reviewer).post(
        "/annotation/add/traffic/", {"trajectory": [intent_traffic[0].pk], "new_queue": "q"}
    )
    label = {
        "accuracy": "1",
        "effectiveness": "0.5",
        "category": "product_qa",
        "route": "public",
        "reply_skills": "",
        "tools": "",
        "note": "",
    }
    for user in (annotator, personas.operator, personas.reviewer, personas.admin):
        assert client_for(user).post("/annotation/q/q/items/1/", label).status_code == 302
    for user in (personas.ml_engineer, personas.outsider):
        assert client_for(user).post("/annotation/q/q/items/1/", label).status_code == 403
    lena = client_for(annotator)
    assert lena.get("/annotation/").status_code == 200 and lena.get("/").status_code == 200
    # an annotator labels; what takes a worker's time or changes a Harness is not theirs
    assert lena.get("/playground/").status_code == 403
    assert lena.post("/annotation/calibrations/start/", {}).status_code == 403
    assert lena.get("/import/").status_code == 403


def test_the_demo_seeds_a_dispute_its_annotator_settles(personas):
    call_command("seed_demo", stdout=StringIO())
    queue = AnnotationQueue.objects.get(name="demo-labels")
    lena = User.objects.get(username="lena")
    disputed = [i for i in queue.items.all() if item_status(item=i) == DISPUTED]
    assert len(disputed) == 1
    item = queue_next_item(queue=queue, user=lena)
    assert item == disputed[0]  # Label next gives the annotator the dispute first
    client = client_for(lena)
    page = client.get("/annotation/q/demo-labels/next/", follow=True)
    assert page.request["PATH_INFO"] == f"/annotation/q/demo-labels/items/{item.position}/"
    shown = _shown_values(page)
    saved = client.post(
        page.request["PATH_INFO"], {**shown, "accuracy": "1", "effectiveness": "1", "note": ""}
    )
    assert saved.status_code == 302
    item.refresh_from_db()
    assert item_status(item=item) == SETTLED
    call_command("seed_demo", stdout=StringIO())  # a second seed leaves the queue as it is
    assert item_status(item=queue.items.get(pk=item.pk)) == SETTLED
