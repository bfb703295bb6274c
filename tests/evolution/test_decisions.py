"""Decisions after the regression report, the editor path, release gates and the stopping advice."""

import pytest
from evolution_testing import small_world

from studio.evolution.errors import EvolutionError
from studio.evolution.models import Evolution, Proposal, Stage
from studio.evolution.services.decisions import proposal_edit_in_editor, proposal_review
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.stages import candidate_build, evolution_start
from studio.gates import business_gate, ifeval_gate, release_gates, stopping_advice
from studio.harnesses.models import Label
from studio.harnesses.services import draft_commit, draft_file_save, label_move
from studio.promotion import stage_decide
from studio.releases.testing import replay_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def diagnosed(personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=20, tmp_path=tmp_path
    )
    with django_capture_on_commit_callbacks(execute=True):
        evolution = evolution_start(
            name="d",
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            actor=personas.admin,
            tolerance=0.02,
        )
    stage = evolution.stages.get()
    with django_capture_on_commit_callbacks(execute=True):
        diagnosis_start(stage=stage, actor=personas.admin)
    return Stage.objects.get(pk=stage.pk)


def _candidate(stage, reviewer, capture):
    top = Proposal.objects.get(diagnosis__stage=stage, index=0)
    proposal_review(proposal=top, actor=reviewer, accept=True)
    with capture(execute=True):
        candidate_build(stage=stage, actor=reviewer)
    return Stage.objects.get(pk=stage.pk)


def test_edit_in_the_editor_then_commit_becomes_the_candidate(
    diagnosed, personas, django_capture_on_commit_callbacks
):
    top = Proposal.objects.get(diagnosis__stage=diagnosed, index=0)
    with pytest.raises(Exception, match="operator"):
        proposal_edit_in_editor(proposal=top, actor=personas.reviewer)
    draft = proposal_edit_in_editor(proposal=top, actor=personas.operator)
    assert "price-needs-tool" in draft.files["hooks.yaml"]  # the proposal's edits are in the draft
    text = draft.files["skills/item_qa/SKILL.md"].replace(
        "say only what it returned", "quote it exactly"
    )
    draft = draft_file_save(
        draft=draft,
        path="skills/item_qa/SKILL.md",
        text=text,
        base_revision=draft.revision,
        actor=personas.operator,
    ).draft
    version = draft_commit(draft=draft, actor=personas.operator, message="refined by hand")
    with django_capture_on_commit_callbacks(execute=True):
        stage = candidate_build(stage=Stage.objects.get(pk=diagnosed.pk), actor=personas.reviewer)
    assert (
        stage.candidate_version == version
        and Proposal.objects.get(pk=top.pk).status == Proposal.EDITED
    )
    stage.refresh_from_db()
    assert stage.comparison["proposals"][0]["targeted"] == len(top.target_case_ids)


def test_another_stage_starts_from_the_candidate_and_reuses_its_run(
    diagnosed, personas, django_capture_on_commit_callbacks
):
    stage = _candidate(diagnosed, personas.reviewer, django_capture_on_commit_callbacks)
    with pytest.raises(Exception, match="reviewer"):
        stage_decide(stage=stage, decision=Stage.ANOTHER, actor=personas.operator)
    stage_decide(stage=stage, decision=Stage.ANOTHER, actor=personas.reviewer, reason="keep going")
    second = stage.evolution.stages.get(number=2)
    assert (
        second.parent_version == stage.candidate_version
        and second.parent_run == stage.candidate_run
    )
    with pytest.raises(EvolutionError, match="closed"):
        stage_decide(
            stage=Stage.objects.get(pk=stage.pk), decision=Stage.STOP, actor=personas.reviewer
        )
    stage_decide(stage=second, decision=Stage.STOP, actor=personas.reviewer, reason="enough")
    assert Evolution.objects.get(pk=stage.evolution_id).status == Evolution.STOPPED


def test_rollback_moves_staging_back_and_restarts_from_the_parent(
    diagnosed, personas, django_capture_on_commit_callbacks
):
    harness = diagnosed.evolution.harness
    label_move(
        harness=harness,
        name="staging",
        version=diagnosed.parent_version,
        actor=personas.reviewer,
        reason="",
    )
    stage = _candidate(diagnosed, personas.reviewer, django_capture_on_commit_callbacks)
    stage_decide(
        stage=stage, decision=Stage.PROMOTE_STAGING, actor=personas.reviewer, reason="try it"
    )
    assert Label.objects.get(harness=harness, name="staging").version == stage.candidate_version
    stage_decide(
        stage=Stage.objects.get(pk=stage.pk),
        decision=Stage.ROLLBACK,
        actor=personas.reviewer,
        reason="complaints",
    )
    assert Label.objects.get(harness=harness, name="staging").version == stage.parent_version
    assert stage.evolution.stages.get(number=2).parent_version == stage.parent_version


def test_production_needs_a_reviewer_a_reason_and_passing_gates(
    diagnosed, personas, tmp_path, django_capture_on_commit_callbacks
):
    stage = _candidate(diagnosed, personas.reviewer, django_capture_on_commit_callbacks)
    with pytest.raises(EvolutionError, match="reason"):
        stage_decide(
            stage=stage, decision=Stage.PROMOTE_PRODUCTION, actor=personas.reviewer, reason=""
        )
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    slow = replay_run(
        tmp_path / "slow",
        checkpoint=model,
        harness_version=stage.candidate_version,
        walls={1: [21.5]},
    )
    with pytest.raises(
        EvolutionError,
        match=rf"latency: fail \(worst level C=1: wall P95 21.50 s .* replay run #{slow.pk}",
    ):
        stage_decide(
            stage=stage, decision=Stage.PROMOTE_PRODUCTION, actor=personas.reviewer, reason="ship"
        )
    fast = replay_run(
        tmp_path / "fast",
        checkpoint=model,
        harness_version=stage.candidate_version,
        walls={1: [8.1]},
    )
    with pytest.raises(EvolutionError, match="general capability: no data"):  # no data blocks too
        stage_decide(
            stage=stage, decision=Stage.PROMOTE_PRODUCTION, actor=personas.reviewer, reason="ship"
        )
    stage_decide(
        stage=stage,
        decision=Stage.PROMOTE_PRODUCTION,
        actor=personas.reviewer,
        reason="ship",
        override_reason="IFEval checked on the trained checkpoint last week",
    )
    assert Label.objects.get(name="production").version == stage.candidate_version
    gates = {
        g.name: g
        for g in release_gates(
            comparison=stage.comparison, tolerance=0.02, version=stage.candidate_version
        )
    }
    assert gates["latency"].status == "pass" and gates["latency"].run_id == fast.pk
    assert (
        "no release of livestream-avatar is approved yet, so any model's newest run counts"
        in gates["latency"].detail
    )
    assert gates["general capability"].status == "no data"
    assert (
        "no finished instruction-following evaluation of any model"
        in gates["general capability"].detail
    )
    stored = {g["name"]: g for g in Stage.objects.get(pk=stage.pk).gates}
    assert stored["latency"]["run_id"] == fast.pk  # the decision keeps the run that fed each gate


def _block(delta_avg, n=10, errors=1):
    metric = {
        "parent": 90.0,
        "candidate": 90.0 + delta_avg,
        "delta": delta_avg,
        "low": 0,
        "high": 0,
        "p_delta_le_zero": 0.5,
    }
    return {
        "n": n,
        "accuracy": metric,
        "effectiveness": metric,
        "avg": metric,
        "errors_parent": errors,
        "errors_candidate": errors,
    }


def test_business_gate_names_the_category_that_dropped():
    report = {
        "overall": _block(+0.5),
        "per_category": {"product_qa": _block(+5.0), "aftersale": _block(-4.0)},
    }
    gate = business_gate(comparison=report, tolerance=0.02)
    assert (
        gate.status == "fail"
        and "aftersale -4.00" in gate.detail
        and "product_qa" not in gate.detail
    )
    assert business_gate(comparison=report, tolerance=0.05).status == "pass"
    assert business_gate(comparison={}, tolerance=0.02).status == "no data"
    assert ifeval_gate().status == "no data"


def test_a_comparison_of_a_shape_the_gate_does_not_know_blocks_naming_the_field():
    """Issue 42: a gate read untyped JSON paths and said "no data" when their shape changed; its
    reader (evaluation.gates.read_comparison) now names the field, and the gate is "unreadable",
    which blocks."""
    renamed = {
        "overall": _block(+0.5),
        "per_category": {"aftersale": {**_block(-4.0), "avg": {"change": -4.0}}},
    }
    gate = business_gate(
        comparison=renamed, tolerance=0.02, source="evolution #3 stage 2's comparison"
    )
    assert gate.status == "unreadable"
    assert gate.detail.startswith(
        "evolution #3 stage 2's comparison, per_category['aftersale']: no field "
        "'avg.delta' (expected a number at 'avg.delta')"
    )
    from evaluation.gates import gates_blocking

    assert gates_blocking([gate]) == [gate]


def test_stopping_advice_after_a_regression_on_long_tail_failures(diagnosed):
    diagnosed.comparison = {
        "overall": _block(-1.0, n=100, errors=4),
        "per_category": {"faq": _block(-10.0)},
    }
    assert "Stop here" in stopping_advice(stages=[diagnosed])
    diagnosed.comparison = {
        "overall": _block(+3.0, n=100, errors=4),
        "per_category": {"faq": _block(+1.0)},
    }
    assert stopping_advice(stages=[diagnosed]) == ""
    diagnosed.comparison = {"overall": _block(-1.0, n=100, errors=40), "per_category": {}}
    diagnosis = diagnosed.diagnoses.first()
    diagnosis.clusters = [{"size": 30}]
    diagnosis.save()
    assert (
        stopping_advice(stages=[diagnosed]) == ""
    )  # failures are not long-tail: more stages may help


def test_a_reviewer_commits_the_draft_an_operator_edited_and_the_stage_shows_the_edited_diff(
    diagnosed, personas, django_capture_on_commit_callbacks
):
    """Issue 38, item 4: the operator edits a proposal in the editor and saves; the reviewer (who
    may not edit Harnesses) commits that draft as the candidate, and the stage page shows the edited
    diff."""
    from evolution_testing import client_for

    from studio.harnesses.selectors import version_files

    top = Proposal.objects.get(diagnosis__stage=diagnosed, index=0)
    draft = proposal_edit_in_editor(proposal=top, actor=personas.operator)
    text = (
        draft.files["skills/item_qa/SKILL.md"]
        + "\n- Quote the tool's price exactly. {#quote-exactly}\n"
    )
    draft_file_save(
        draft=draft,
        path="skills/item_qa/SKILL.md",
        text=text,
        base_revision=draft.revision,
        actor=personas.operator,
    )
    page = client_for(personas.reviewer).get(f"/evolution/stages/{diagnosed.pk}/").content.decode()
    assert 'id="draft-diff"' in page and "Quote the tool&#x27;s price exactly." in page
    assert f"edited by {personas.operator.username}" in page
    operator_page = (
        client_for(personas.operator).get(f"/evolution/stages/{diagnosed.pk}/").content.decode()
    )
    assert (
        'id="candidate-by-reviewer"' in operator_page
        and 'id="build-candidate"' not in operator_page
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(personas.reviewer).post(
            f"/evolution/stages/{diagnosed.pk}/candidate/", {"message": ""}
        )
    assert response.status_code == 302
    stage = Stage.objects.get(pk=diagnosed.pk)
    assert stage.candidate_version is not None, [str(m) for m in response.wsgi_request._messages]
    assert (
        "quote-exactly" in version_files(version=stage.candidate_version)["skills/item_qa/SKILL.md"]
    )
    assert stage.draft.status == "committed" and stage.candidate_version.author == personas.reviewer


def test_an_ifeval_block_of_a_shape_the_gate_does_not_know_blocks_naming_the_field(tmp_path):
    """The capability gate's evidence (``evaluation.gates.read_ifeval``): an evaluation whose ifeval
    block lost ``per_prompt`` is "unreadable", naming the run and the field, not "no data"."""
    from studio.releases.testing import ifeval_run
    from studio.training.models import TrainingRun

    model = tmp_path / "model"
    run = ifeval_run(tmp_path / "eval", model=model, prompt_strict=60.0)
    summary = run.summary
    del summary["evaluation"]["ifeval"]["per_prompt"]
    TrainingRun.objects.filter(pk=run.pk).update(summary=summary)
    gate = ifeval_gate(checkpoint=model.resolve())
    assert gate.status == "unreadable" and gate.run_id == run.pk
    assert f"evaluation run #{run.pk} (ifeval): no field 'per_prompt'" in gate.detail
