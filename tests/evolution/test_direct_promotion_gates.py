"""Production moved from the Harness page or the API goes through the same release gates as a stage
decision.

Before, only the evolution stage's decision checked the gates: a reviewer could
point production at any version from its page or with one API call while the
latency and general-capability gates said "no data".
"""

import json

import pytest
from evolution_testing import client_for

from studio.accounts.services import api_token_create
from studio.annotation.testing import calibrated_judge
from studio.audit.models import AuditEvent
from studio.compatibility.testing import passing_compatibility
from studio.harnesses.models import Label
from studio.harnesses.services import harness_import
from studio.releases.testing import ifeval_run, replay_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def v1(personas, demo_files):
    return harness_import(files=demo_files, author=personas.operator, message="demo").version


def move(client, **form):
    return client.post(
        "/h/livestream-avatar/labels/move/", {"label": "production", "version": 1, **form}
    )


def messages_of(client) -> str:
    return client.get("/h/livestream-avatar/").content.decode()


def test_a_no_data_gate_refuses_production_from_the_harness_page(personas, v1):
    reviewer = client_for(personas.reviewer)
    move(reviewer, reason="looks good")
    page = messages_of(reviewer)
    assert "release gates did not pass" in page and "latency: no data" in page
    assert (
        "business regression" not in page.split("release gates did not pass")[1].split("</")[0]
    )  # nothing to
    # regress against: v1 has no parent and nothing is in production yet
    assert not Label.objects.filter(name="production").exists()
    assert not AuditEvent.objects.filter(action="evolution.gates.override").exists()


def test_a_written_override_promotes_and_is_recorded_on_the_version(personas, v1):
    reviewer = client_for(personas.reviewer)
    move(reviewer, reason="first release", override_reason="  ")  # blank is no override
    assert not Label.objects.filter(name="production").exists()
    move(reviewer, reason="first release", override_reason="launch today; replay booked for Monday")
    assert Label.objects.get(name="production").version == v1
    event = AuditEvent.objects.get(action="evolution.gates.override")
    assert event.actor == personas.reviewer and event.data["version"] == 1
    # the business gate passed: v1 has no parent and nothing was in production to regress against
    assert {g["name"] for g in event.data["gates"]} == {
        "latency",
        "general capability",
        "compatibility",
    }
    assert "release gates overridden" in Label.objects.get(name="production").moves.first().reason
    page = client_for(personas.ml_engineer).get("/h/livestream-avatar/v/1/").content.decode()
    assert 'id="release-gates"' in page and "launch today; replay booked for Monday" in page


def test_only_a_reviewer_or_admin_may_promote_even_with_an_override(personas, v1):
    operator = client_for(personas.operator)  # may move other labels, not production
    move(operator, reason="go", override_reason="trust me")
    assert "needs the reviewer role" in messages_of(operator)
    assert (
        move(client_for(personas.ml_engineer), reason="go", override_reason="trust me").status_code
        == 403
    )
    assert not Label.objects.filter(name="production").exists()


def test_passing_gates_need_no_override(personas, v1, monkeypatch, tmp_path):
    from studio import gates

    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    replay_run(tmp_path / "replay", checkpoint=model, harness_version=v1, walls={1: [4.2]})
    ifeval_run(tmp_path / "eval", model=model, prompt_strict=70.0)
    passing_compatibility(version=v1, folder=tmp_path)
    calibrated_judge(actor=personas.admin)
    from evaluation.gates import Gate

    passing = Gate("business regression", "pass", "stage 1 of evolution #1")
    monkeypatch.setattr(gates, "version_business_gate", lambda *, version: passing)
    move(client_for(personas.admin), reason="all green")
    assert Label.objects.get(name="production").version == v1
    assert not AuditEvent.objects.filter(action="evolution.gates.override").exists()


def test_the_api_applies_the_same_gates(personas, v1, client):
    token = api_token_create(user=personas.reviewer, name="ci")[1]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    url = "/api/v1/harnesses/livestream-avatar/labels/production/"
    refused = client.post(
        url,
        json.dumps({"version": 1, "reason": "ci green"}),
        content_type="application/json",
        **headers,
    )
    assert refused.status_code == 400 and "latency: no data" in refused.json()["error"]
    ok = client.post(
        url,
        json.dumps({"version": 1, "reason": "ci green", "override_reason": "staged rollout"}),
        content_type="application/json",
        **headers,
    )
    assert ok.status_code == 200 and ok.json()["version"] == 1
    assert (
        AuditEvent.objects.get(action="evolution.gates.override").data["reason"] == "staged rollout"
    )


def test_pages_that_read_gates_and_cells_write_nothing(personas, v1, tmp_path):
    """Issue 42: selectors only read. The compatibility selectors kept a cell's figures and changes
    on its row while a page read them; now the cell's figures are stored when its run scored (a
    receiver of ``eval_run_scored``) and anything else is computed into the cache, so a GET runs no
    write."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from studio.compatibility.models import Cell
    from studio.gates import compatibility_gate

    cell = passing_compatibility(version=v1, folder=tmp_path)
    Cell.objects.filter(pk=cell.pk).update(
        figures={}
    )  # a cell scored before its figures were stored
    admin = client_for(personas.admin)
    with CaptureQueriesContext(connection) as queries:
        for url in ("/compatibility/", "/h/livestream-avatar/v/1/", "/h/livestream-avatar/"):
            assert admin.get(url).status_code == 200, url
        gate = compatibility_gate(version=v1)
    writes = [
        q["sql"][:120]
        for q in queries.captured_queries
        if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert not writes, writes
    assert gate.status == "pass" and "AVG 100.0" in gate.detail
    assert Cell.objects.get(pk=cell.pk).figures == {}
