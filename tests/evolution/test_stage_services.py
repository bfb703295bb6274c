"""One evolution stage through the services, jobs run inline: evaluate, diagnose, accept, compare,
promote."""

import pytest
from evolution_testing import small_world

from studio.evolution.errors import EvolutionError
from studio.evolution.models import CaseResult, DatasetCase, EvalRun, Proposal, Stage
from studio.evolution.services.decisions import proposal_review
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.stages import candidate_build, evolution_start
from studio.harnesses.models import Label
from studio.promotion import stage_decide

pytestmark = pytest.mark.django_db


def test_full_stage_restores_the_planted_defect(
    personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks
):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=40, tmp_path=tmp_path
    )
    with django_capture_on_commit_callbacks(execute=True):
        evolution = evolution_start(
            name="fix prices",
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            actor=personas.operator,
        )
    stage = evolution.stages.get()
    parent = EvalRun.objects.get(pk=stage.parent_run_id)
    assert parent.status == EvalRun.SUCCEEDED and parent.results.count() == 40
    assert parent.summary["per_category"]["product_qa"]["accuracy"] < 90

    with django_capture_on_commit_callbacks(execute=True):
        diagnosis = diagnosis_start(stage=stage, actor=personas.operator)
    diagnosis.refresh_from_db()
    assert diagnosis.status == "succeeded" and diagnosis.clusters
    heldout = set(
        DatasetCase.objects.filter(dataset=dataset, split="heldout").values_list(
            "case_id", flat=True
        )
    )
    proposal = diagnosis.proposals.get(index=0)
    assert (
        proposal.reason == "unsupported_price"
        and proposal.diagnoser == "rule-based"
        and proposal.valid
    )
    assert not heldout & set(proposal.target_case_ids)  # held-out cases never feed the diagnosis

    with pytest.raises(Exception, match="reviewer"):
        proposal_review(proposal=proposal, actor=personas.operator, accept=True)
    with pytest.raises(EvolutionError, match="reason: say why"):
        proposal_review(proposal=proposal, actor=personas.reviewer, accept=False)
    proposal_review(proposal=proposal, actor=personas.reviewer, accept=True)
    for other in diagnosis.proposals.exclude(pk=proposal.pk):
        proposal_review(
            proposal=other, actor=personas.reviewer, accept=False, reason="not this stage"
        )

    with django_capture_on_commit_callbacks(execute=True):
        stage = candidate_build(stage=Stage.objects.get(pk=stage.pk), actor=personas.reviewer)
    stage.refresh_from_db()
    assert stage.candidate_version.parent_id == version.pk
    report = stage.comparison
    assert report["per_category"]["product_qa"]["accuracy"]["delta"] > 10
    targeted = report["proposals"][0]
    assert report["newly_passing"] and targeted["fixed"] >= 0.8 * targeted["targeted"]
    assert targeted["fixed"] + len(targeted["still_failing"]) == targeted["targeted"]
    targeted_rows = CaseResult.objects.filter(
        run=stage.candidate_run, case_id__in=proposal.target_case_ids
    )
    assert all(r.accuracy == 1 for r in targeted_rows)  # no wrong price left in the targeted cases
    assert set(report["per_split"]) <= {"dev", "heldout"}
    assert CaseResult.objects.filter(run=stage.candidate_run).count() == 40

    stage_decide(
        stage=stage, decision=Stage.PROMOTE_STAGING, actor=personas.reviewer, reason="better prices"
    )
    assert (
        Label.objects.get(harness=version.harness, name="staging").version_id
        == stage.candidate_version_id
    )
    with pytest.raises(EvolutionError, match="accept at least one|already has its candidate"):
        candidate_build(stage=stage, actor=personas.reviewer)
    assert Proposal.objects.filter(status="accepted").count() == 1


def test_llm_diagnoser_from_the_studio_records_its_name(
    personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks, fake_openai
):
    import json

    from studio.endpoints.models import ModelEndpoint

    fake_openai.answers.append(
        json.dumps(
            {
                "proposals": [
                    {
                        "title": "Ground prices",
                        "rationale": "guessed prices",
                        "cluster": 0,
                        "edits": [
                            {
                                "op": "require_tool_call",
                                "claim": "price",
                                "tools": ["get_product_info_by_link_id"],
                            }
                        ],
                    }
                ]
            }
        )
    )
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=20, tmp_path=tmp_path
    )
    judge = ModelEndpoint.objects.create(
        name="diag",
        route=ModelEndpoint.OPENAI,
        model="diag-model",
        base_url=fake_openai.url,
        saved_by_admin=True,  # a loopback server: only an admin's endpoint may call it
    )  # tests/fake_openai.py
    with django_capture_on_commit_callbacks(execute=True):
        evolution = evolution_start(
            name="llm",
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            actor=personas.admin,
            diagnoser="llm",
            diagnoser_endpoint=judge,
        )
    with django_capture_on_commit_callbacks(execute=True):
        diagnosis = diagnosis_start(stage=evolution.stages.get(), actor=personas.admin)
    proposal = diagnosis.proposals.get()
    assert (
        proposal.diagnoser == "llm:diag-model" and proposal.valid and "hooks.yaml" in proposal.diff
    )
    assert "unsupported_price" in json.dumps(fake_openai.bodies[-1]["messages"])
    with pytest.raises(EvolutionError, match="OpenAI-compatible"):
        evolution_start(
            name="x",
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            actor=personas.admin,
            diagnoser="llm",
            diagnoser_endpoint=endpoint,
        )
