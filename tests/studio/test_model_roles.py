"""The endpoint registry chooses the endpoint each model role calls (studio/endpoints:
RoleEndpoint): an ML engineer or admin sets it on the Endpoints page, bad input is a 400 naming the
field, and a calibration's bare ``llm`` judge calls that endpoint through the one factory without
the worker's key."""

from __future__ import annotations

import pytest
from studio_testing import client_for

from evaluation.judges import make_judge
from harness.livestream import demo_catalogue
from studio.annotation.calibration import CalibrationError, judge_check, studio_judge_model
from studio.audit.models import AuditEvent
from studio.endpoints.models import ModelEndpoint, RoleEndpoint
from studio.endpoints.services import endpoint_save

pytestmark = pytest.mark.django_db


def _endpoint(name="judge-server", base_url="http://127.0.0.1:9/v1"):
    return endpoint_save(
        endpoint=None,
        name=name,
        route=ModelEndpoint.OPENAI,
        base_url=base_url,
        model="demo-model",
        description="",
        actor=None,
    )


@pytest.mark.parametrize("role", ["judge", "diagnoser"])
def test_an_ml_engineer_chooses_and_clears_a_roles_endpoint(personas, role):
    endpoint = _endpoint()
    client = client_for(personas.ml_engineer)
    response = client.post("/endpoints/roles/", {"role": role, "endpoint": "judge-server"})
    assert response.status_code == 302
    assert RoleEndpoint.objects.get(role=role).endpoint == endpoint
    page = client.get("/endpoints/").content.decode()
    assert f'id="role-{role}"' in page and '<option value="judge-server" selected>' in page
    assert AuditEvent.objects.filter(action="endpoint.role", target=f"model role {role}").exists()
    assert client.post("/endpoints/roles/", {"role": role, "endpoint": ""}).status_code == 302
    assert not RoleEndpoint.objects.filter(role=role).exists()


@pytest.mark.parametrize("who", ["operator", "reviewer", "outsider"])
def test_only_those_who_manage_endpoints_choose_a_roles_endpoint(personas, who):
    _endpoint()
    response = client_for(getattr(personas, who)).post(
        "/endpoints/roles/", {"role": "judge", "endpoint": "judge-server"}
    )
    assert response.status_code == 403 and not RoleEndpoint.objects.exists()


def test_a_bad_role_or_endpoint_is_a_400_naming_the_field(personas):
    _endpoint()
    client = client_for(personas.admin)
    response = client.post("/endpoints/roles/", {"role": "critic", "endpoint": "judge-server"})
    assert (
        response.status_code == 400
        and "role: &#x27;critic&#x27; is not one of judge, diagnoser" in response.content.decode()
    )
    response = client.post("/endpoints/roles/", {"role": "judge", "endpoint": "nowhere"})
    assert (
        response.status_code == 400
        and "endpoint: no endpoint called &#x27;nowhere&#x27;" in response.content.decode()
    )
    assert not RoleEndpoint.objects.exists()


def test_a_bare_llm_judge_needs_the_judge_role_and_then_calls_its_endpoint_keyless(
    personas, fake_openai, monkeypatch
):
    with pytest.raises(CalibrationError, match="no endpoint is chosen for the judge role"):
        judge_check("llm")
    with pytest.raises(CalibrationError, match="in the studio write llm"):
        judge_check("llm:local")
    monkeypatch.setenv("OPENAI_API_KEY", "the-workers-own-key")
    RoleEndpoint.objects.create(role="judge", endpoint=_endpoint(base_url=fake_openai.url))
    assert judge_check("panel:llm|programmatic") == "panel:llm|programmatic"
    fake_openai.answers.append(
        '{"accuracy": 1, "effectiveness": 1, "reasons": [], "explanation": "ok"}'
    )
    judge = make_judge("llm", catalogue=demo_catalogue(), judge_model=studio_judge_model)
    verdict = judge.judge(case={"comments": ["hi"]}, reply="Hello!")
    assert (verdict.accuracy, verdict.judge) == (1, "llm:demo-model")
    chat = [r for r in fake_openai.requests if r.method == "POST"][-1]
    assert "the-workers-own-key" not in str(chat.headers)
    assert judge.model.usage()["calls"] == 1


def test_a_new_evolution_preselects_the_diagnoser_roles_endpoint(personas):
    endpoint = _endpoint(name="diagnoser-server")
    RoleEndpoint.objects.create(role="diagnoser", endpoint=endpoint)
    page = client_for(personas.ml_engineer).get("/evolution/new/").content.decode()
    assert f'<option value="{endpoint.pk}" selected>diagnoser-server</option>' in page


def test_a_local_endpoint_chosen_for_the_diagnoser_role_is_offered_and_diagnoses(personas):
    """Issue 42 §2: a diagnoser can use any route an endpoint can, the local one included, once the
    registry chose it for the diagnoser role; a local endpoint no role names is still not
    offered."""
    from evaluation.diagnosis import LLMDiagnoser
    from harness.model_cache import tiny_model_dir
    from studio.endpoints.services import endpoint_role_model
    from studio.evolution.services.diagnosis import diagnoser_endpoints, diagnoser_options

    tiny = str(tiny_model_dir())
    chosen = endpoint_save(
        endpoint=None,
        name="local-diagnoser",
        route=ModelEndpoint.LOCAL,
        base_url="",
        model=tiny,
        description="",
        actor=None,
    )
    other = endpoint_save(
        endpoint=None,
        name="local-other",
        route=ModelEndpoint.LOCAL,
        base_url="",
        model=tiny,
        description="",
        actor=None,
    )
    assert not diagnoser_options()[
        1
    ].usable  # no OpenAI-compatible endpoint and no role chosen: as the demo
    RoleEndpoint.objects.create(role="diagnoser", endpoint=chosen)
    assert list(diagnoser_endpoints()) == [chosen]
    option = diagnoser_options()[1]
    assert option.usable and "usable with local-diagnoser" in option.why
    page = client_for(personas.ml_engineer).get("/evolution/new/").content.decode()
    assert f'<option value="{chosen.pk}" selected>local-diagnoser</option>' in page
    assert (
        f'value="{other.pk}">local-other</option>'
        not in page.split('name="diagnoser_endpoint"')[1].split("</select>")[0]
    )
    diagnoser = LLMDiagnoser(model=endpoint_role_model(role="diagnoser", endpoint=chosen))
    assert diagnoser.model.role == "diagnoser"
