"""Diagnosis on the evolution pages: which diagnosers can run, "the model, not the Harness",
predicted fixes.

Through the Django client with the personas (jobs inline). The policies are
scripted endpoints: the shortcut script (a wrong price unless a hook makes it
call the tool first) and one that never calls a tool, as an untrained model does.
"""

import json

import pytest
from evolution_testing import client_for, small_world

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Evolution, Stage

pytestmark = pytest.mark.django_db


def start_and_diagnose(client, *, version, dataset, endpoint, capture):
    with capture(execute=True):
        response = client.post(
            "/evolution/new/",
            {
                "name": "diagnose",
                "version": version.pk,
                "dataset": dataset.name,
                "endpoint": endpoint.pk,
                "diagnoser": "rule-based",
                "tolerance": "0.05",
                "categories": "",
            },
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    stage = Stage.objects.get()
    with capture(execute=True):
        client.post(f"/evolution/stages/{stage.pk}/diagnose/")
    return stage, client.get(f"/evolution/stages/{stage.pk}/").content.decode()


def test_the_form_says_which_diagnosers_can_run_before_anything_runs(
    personas, demo_sets_dir, defect_files, tmp_path, monkeypatch
):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=4, tmp_path=tmp_path
    )
    operator = client_for(personas.operator)
    page = operator.get("/evolution/new/").content.decode()
    assert 'data-diagnoser="rule-based" data-usable="yes"' in page
    assert 'data-diagnoser="llm" data-usable="no"' in page
    assert "not usable: no OpenAI-compatible endpoint is configured" in page
    assert "LLM over an endpoint (not usable here)" in page

    page = operator.post(
        "/evolution/new/",
        {
            "name": "llm",
            "version": version.pk,
            "dataset": dataset.name,
            "endpoint": endpoint.pk,
            "diagnoser": "llm",
            "tolerance": "0.05",
        },
    ).content.decode()
    assert "the LLM over an endpoint diagnoser is not usable: no OpenAI-compatible endpoint" in page
    assert not Evolution.objects.exists()  # refused before a run started

    monkeypatch.delenv("DIAGNOSER_KEY", raising=False)
    from studio.endpoints.models import EndpointSecret

    secret = EndpointSecret.objects.create(
        name="diagnoser-key", from_env="DIAGNOSER_KEY", allowed_origins="http://127.0.0.1:9"
    )
    keyed = ModelEndpoint.objects.create(
        name="vendor",
        route=ModelEndpoint.OPENAI,
        base_url="http://127.0.0.1:9/v1",
        model="big",
        api_key_secret=secret,
    )
    page = operator.get("/evolution/new/").content.decode()
    assert "not usable: vendor&#x27;s endpoint secret diagnoser-key has no key here" in page
    page = operator.post(
        "/evolution/new/",
        {
            "name": "llm",
            "version": version.pk,
            "dataset": dataset.name,
            "endpoint": endpoint.pk,
            "diagnoser": "llm",
            "diagnoser_endpoint": keyed.pk,
            "tolerance": "0.05",
        },
    ).content.decode()
    assert "not usable" in page and not Evolution.objects.exists()

    monkeypatch.setenv("DIAGNOSER_KEY", "secret")
    page = operator.get("/evolution/new/").content.decode()
    assert 'data-diagnoser="llm" data-usable="yes"' in page
    assert "usable with vendor (vendor never connection-tested)" in page
    ModelEndpoint.objects.filter(pk=keyed.pk).update(
        last_check_ok=False, last_check_message="connection refused"
    )
    page = operator.get("/evolution/new/").content.decode()
    assert "not usable: vendor&#x27;s last connection test failed: connection refused" in page


def test_a_model_that_never_calls_a_tool_gets_the_model_not_the_harness(
    personas, demo_sets_dir, tmp_path, django_capture_on_commit_callbacks
):
    from harness import demo_harness_dir, read_dir

    files, _ = read_dir(demo_harness_dir())
    version, dataset, _ = small_world(
        sets_dir=demo_sets_dir, files=files, actor=personas.admin, size=12, tmp_path=tmp_path
    )
    script = tmp_path / "never-a-tool.json"
    script.write_text(
        json.dumps(
            {
                c.case_id: ["Thanks for watching, it is a great product!"] * 12
                for c in dataset.cases.all()
            }
        )
    )
    untrained = ModelEndpoint.objects.create(
        name="untrained", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    stage, page = start_and_diagnose(
        client_for(personas.operator),
        version=version,
        dataset=dataset,
        endpoint=untrained,
        capture=django_capture_on_commit_callbacks,
    )
    diagnosis = stage.diagnoses.get()
    assert diagnosis.status == "succeeded" and diagnosis.failed > 0
    assert 'id="diagnosis-finding"' in page
    assert (
        f"the model, not the Harness: none of the {diagnosis.failed} failing case(s) called a tool"
        in page
    )
    assert not diagnosis.proposals.exists()  # no budget raise, no edit at all
    assert 'id="step-confirm"' not in page


def test_each_proposal_shows_its_predicted_fixes_and_the_candidate_run_agrees(
    personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks
):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=30, tmp_path=tmp_path
    )
    operator, reviewer = client_for(personas.operator), client_for(personas.reviewer)
    stage, page = start_and_diagnose(
        operator,
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        capture=django_capture_on_commit_callbacks,
    )
    price = next(
        p
        for p in stage.diagnoses.get().proposals.all()
        if p.title == "Prices stated without a tool result"
    )
    targeted = len(price.target_case_ids)
    assert price.replay["replayed"] == targeted and price.replay["fixed"] > 0
    assert (
        f"fixes {price.replay['fixed']} of {targeted} targeted "
        f"case{'s' if targeted != 1 else ''} (predicted)" in page
    )
    assert "replied without calling" in page  # the evidence behind the hook
    # the fixes checked under the compatibility variants: the shortcut script learnt the demo's tool
    # names, so a fix under renamed tools fails and the proposal says its fix holds only in the
    # exact wording
    held = price.replay["variants"]
    assert held["checked"] == price.replay["fixed"] and held["held"] < held["checked"]
    assert f"holds under variants in {held['held']} of {targeted}" in page
    assert (
        "fails with renamed tools" in page and 'class="status status-failed exact-wording"' in page
    )

    assert (
        reviewer.post(f"/evolution/proposals/{price.pk}/review/", {"action": "accept"}).status_code
        == 302
    )
    with django_capture_on_commit_callbacks(execute=True):
        reviewer.post(f"/evolution/stages/{stage.pk}/candidate/", {"message": ""})
    stage.refresh_from_db()
    (report,) = [p for p in stage.comparison["proposals"] if p["title"] == price.title]
    assert (report["fixed"], report["targeted"]) == (
        price.replay["fixed"],
        targeted,
    )  # the prediction held
