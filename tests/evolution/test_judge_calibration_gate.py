"""Judged figures need a calibrated judge: every page that shows an evaluation's figures says when
its judge was never measured against human labels (or agrees with them less than
JUDGE_MIN_AGREEMENT), and promotion to production refuses such figures unless a reviewer writes an
override, as it does for "no data"."""

import pytest
from evolution_testing import client_for, small_world

from studio.annotation.testing import calibrated_judge
from studio.compatibility.testing import passing_compatibility
from studio.evolution.errors import EvolutionError
from studio.evolution.models import Proposal, Stage
from studio.evolution.services.decisions import proposal_review
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.stages import candidate_build, evolution_start
from studio.gates import version_release_gates
from studio.harnesses.models import Label
from studio.promotion import stage_decide
from studio.releases.testing import ifeval_run, replay_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluated(personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks):
    """A stage whose candidate has its regression report, and every model gate passing."""
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=12, tmp_path=tmp_path
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
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    replay_run(
        tmp_path / "fast",
        checkpoint=model,
        harness_version=stage.candidate_version,
        walls={1: [8.0]},
    )
    ifeval_run(tmp_path / "eval", model=model, prompt_strict=70.0)
    passing_compatibility(version=stage.candidate_version, folder=tmp_path)
    return stage


def _mark(page) -> str:
    import re

    html = page.content.decode()
    found = re.search(r'data-judge-status="([a-z ]+)"', html)
    return found.group(1) if found else ""


def test_an_uncalibrated_judge_is_marked_and_refused_without_an_override(evaluated, personas):
    client = client_for(personas.operator)
    run = evaluated.parent_run
    case_id = run.case_ids[0]
    for url in (
        f"/evolution/runs/{run.pk}/",
        f"/evolution/runs/{run.pk}/cases/{case_id}/",
        f"/jobs/{run.job_id}/",
        f"/evolution/stages/{evaluated.pk}/",
        f"/evolution/{evaluated.evolution_id}/",
        "/compatibility/",
        "/training/checkpoints/",
    ):
        page = client.get(url)
        assert page.status_code == 200
        assert _mark(page) == "uncalibrated", url
        assert "has not been calibrated against human labels" in page.content.decode()

    gates = {g.name: g for g in version_release_gates(version=evaluated.candidate_version)}
    assert gates["judge calibration"].status == "no data"
    assert {name for name, g in gates.items() if g.status != "pass"} == {"judge calibration"}
    with pytest.raises(EvolutionError) as refused:
        stage_decide(
            stage=evaluated,
            decision=Stage.PROMOTE_PRODUCTION,
            actor=personas.reviewer,
            reason="ship",
        )
    assert "judge calibration: no data" in str(refused.value) and "override" in str(refused.value)
    assert not Label.objects.filter(name=Label.PRODUCTION).exists()

    stage_decide(
        stage=evaluated,
        decision=Stage.PROMOTE_PRODUCTION,
        actor=personas.reviewer,
        reason="ship",
        override_reason="labels are on their way; the programmatic judge checks prices exactly",
    )
    stage = Stage.objects.get(pk=evaluated.pk)
    assert {g["name"]: g["status"] for g in stage.gates}["judge calibration"] == "no data"
    assert Label.objects.get(name=Label.PRODUCTION).version == stage.candidate_version


def test_a_calibrated_judge_passes_and_one_below_agreement_fails(evaluated, personas):
    calibrated_judge(actor=personas.ml_engineer, disagree=True)
    page = client_for(personas.operator).get(f"/evolution/runs/{evaluated.parent_run_id}/")
    assert _mark(page) == "below agreement"
    with pytest.raises(EvolutionError, match="judge calibration: fail"):
        stage_decide(
            stage=evaluated,
            decision=Stage.PROMOTE_PRODUCTION,
            actor=personas.reviewer,
            reason="ship",
        )

    calibrated_judge(actor=personas.ml_engineer)  # the newest calibration counts
    page = client_for(personas.operator).get(f"/evolution/runs/{evaluated.parent_run_id}/")
    assert _mark(page) == "calibrated"
    stage_decide(
        stage=evaluated, decision=Stage.PROMOTE_PRODUCTION, actor=personas.reviewer, reason="ship"
    )
    stage = Stage.objects.get(pk=evaluated.pk)
    assert {g["status"] for g in stage.gates} == {"pass"} and stage.gate_override_reason == ""
