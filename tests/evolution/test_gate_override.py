"""Gates that gate: promotion to production with a failing or no-data gate needs a reviewer's
written override.

The override is only the reviewer's (or an admin's); its reason is required, recorded in the audit
log, on the production label's move and on the stage, and the evolution ends "promoted" rather than
staying active.
"""

import pytest
from evolution_testing import client_for, small_world

from studio.annotation.testing import calibrated_judge
from studio.audit.models import AuditEvent
from studio.compatibility.testing import passing_compatibility
from studio.evolution.errors import EvolutionError
from studio.evolution.models import Evolution, Proposal, Stage
from studio.evolution.services.decisions import proposal_review
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.stages import candidate_build, evolution_start
from studio.harnesses.models import Label, LabelMove
from studio.promotion import stage_decide
from studio.releases.testing import ifeval_run, replay_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluated(personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks):
    """A stage whose candidate has its regression report; no replay or IFEval run has finished (two
    gates: no data)."""
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=16, tmp_path=tmp_path
    )
    with django_capture_on_commit_callbacks(execute=True):
        evolution = evolution_start(
            name="g", version=version, dataset=dataset, endpoint=endpoint, actor=personas.admin
        )
    stage = evolution.stages.get()
    with django_capture_on_commit_callbacks(execute=True):
        diagnosis_start(stage=stage, actor=personas.admin)
    proposal_review(
        proposal=Proposal.objects.get(diagnosis__stage=stage, index=0),
        actor=personas.reviewer,
        accept=True,
    )
    with django_capture_on_commit_callbacks(execute=True):
        candidate_build(stage=Stage.objects.get(pk=stage.pk), actor=personas.reviewer)
    stage = Stage.objects.get(pk=stage.pk)
    assert stage.comparison
    calibrated_judge(
        actor=personas.admin
    )  # the judged figures are trusted: these tests are about the other gates
    return stage


def test_no_data_gates_refuse_production_without_an_override(evaluated, personas):
    with pytest.raises(EvolutionError) as refused:
        stage_decide(
            stage=evaluated,
            decision=Stage.PROMOTE_PRODUCTION,
            actor=personas.reviewer,
            reason="ship",
        )
    message = str(refused.value)
    assert "latency: no data" in message and "general capability: no data" in message
    assert "override" in message
    assert not Label.objects.filter(
        name=Label.PRODUCTION, version=evaluated.candidate_version
    ).exists()
    assert Evolution.objects.get(pk=evaluated.evolution_id).status == Evolution.ACTIVE
    assert Stage.objects.get(pk=evaluated.pk).decision == ""


def test_a_failing_gate_refuses_too_and_whitespace_is_no_reason(evaluated, personas, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    replay_run(
        tmp_path / "slow",
        checkpoint=model,
        harness_version=evaluated.candidate_version,
        walls={1: [21.5]},
    )
    ifeval_run(tmp_path / "eval", model=model, prompt_strict=70.0)
    with pytest.raises(EvolutionError, match="latency: fail"):
        stage_decide(
            stage=evaluated,
            decision=Stage.PROMOTE_PRODUCTION,
            actor=personas.reviewer,
            reason="ship",
            override_reason="   ",
        )
    replay_run(
        tmp_path / "fast",
        checkpoint=model,
        harness_version=evaluated.candidate_version,
        walls={1: [8.0]},
    )
    passing_compatibility(version=evaluated.candidate_version, folder=tmp_path)
    stage_decide(
        stage=evaluated, decision=Stage.PROMOTE_PRODUCTION, actor=personas.reviewer, reason="ship"
    )
    stage = Stage.objects.get(pk=evaluated.pk)
    assert Label.objects.get(name=Label.PRODUCTION).version == stage.candidate_version
    assert stage.gate_override_reason == "" and {g["status"] for g in stage.gates} == {"pass"}
    assert not AuditEvent.objects.filter(action="evolution.gates.override").exists()


def test_an_override_is_recorded_in_the_audit_log_on_the_label_and_the_stage(evaluated, personas):
    stage_decide(
        stage=evaluated,
        decision=Stage.PROMOTE_PRODUCTION,
        actor=personas.reviewer,
        reason="ship",
        override_reason="latency measured on the staging replay by hand: p95 6 s",
    )
    stage = Stage.objects.get(pk=evaluated.pk)
    assert Label.objects.get(name=Label.PRODUCTION).version == stage.candidate_version
    assert stage.gate_override_reason == "latency measured on the staging replay by hand: p95 6 s"
    assert {g["name"]: g["status"] for g in stage.gates}["latency"] == "no data"
    event = AuditEvent.objects.get(action="evolution.gates.override")
    assert event.actor == personas.reviewer and "p95 6 s" in event.data["reason"]
    assert {g["name"] for g in event.data["gates"]} == {
        "latency",
        "general capability",
        "compatibility",
    }
    move = LabelMove.objects.filter(label__name=Label.PRODUCTION).first()
    assert "release gates overridden" in move.reason and "p95 6 s" in move.reason
    evolution = Evolution.objects.get(pk=stage.evolution_id)
    assert evolution.status == Evolution.PROMOTED  # decided: not "active" any more
    with pytest.raises(EvolutionError, match="promoted"):
        stage_decide(stage=stage, decision=Stage.STOP, actor=personas.reviewer)


PROMOTE = {"decision": "promote_production", "reason": "ship it"}


@pytest.mark.parametrize("role", ["operator", "ml_engineer", "outsider"])
def test_only_a_reviewer_or_admin_may_override(role, evaluated, personas):
    client = client_for(personas.by_role()[role])
    response = client.post(
        f"/evolution/stages/{evaluated.pk}/decide/", {**PROMOTE, "override_reason": "trust me"}
    )
    assert response.status_code == 403
    assert not Label.objects.filter(name=Label.PRODUCTION).exists()
    assert not AuditEvent.objects.filter(action="evolution.gates.override").exists()


@pytest.mark.parametrize("role", ["reviewer", "admin"])
def test_reviewer_and_admin_override_with_a_written_reason(role, evaluated, personas):
    client = client_for(personas.by_role()[role])
    page = client.get(f"/evolution/stages/{evaluated.pk}/").content.decode()
    assert 'name="override_reason"' in page and "3 release gates did not pass" in page
    page = client.post(
        f"/evolution/stages/{evaluated.pk}/decide/", PROMOTE, follow=True
    ).content.decode()
    assert "latency: no data" in page and "write why in" in page
    assert not Label.objects.filter(name=Label.PRODUCTION).exists()
    response = client.post(
        f"/evolution/stages/{evaluated.pk}/decide/",
        {**PROMOTE, "override_reason": "IFEval is run weekly; last week's run passed"},
    )
    assert response.status_code == 302
    assert Label.objects.get(name=Label.PRODUCTION).version == evaluated.candidate_version
    page = client.get(f"/evolution/stages/{evaluated.pk}/").content.decode()
    assert "Release gates overridden by" in page and "last week&#x27;s run passed" in page
    page = client.get(f"/evolution/{evaluated.evolution_id}/").content.decode()
    assert "promoted" in page and "overridden" in page
    fallbacks = [
        s.summary["outcomes"]["fallback"] for s in (evaluated.parent_run, evaluated.candidate_run)
    ]
    assert (
        f'<td class="fallbacks"><span>{fallbacks[0]}/16</span> '
        f"→ <span>{fallbacks[1]}/16</span></td>" in page
    )
