"""The held-out edit benchmark page: a stage's edits under two models, four evaluation runs on the
held-out cases (a finished one reused), then each model's error-count reduction with its
interval."""

import shutil

import pytest
from evolution_testing import client_for, small_world

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import DatasetCase, EvalRun, Proposal, Stage
from studio.evolution.services.decisions import proposal_review
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.stages import candidate_build, evolution_start

pytestmark = pytest.mark.django_db


@pytest.fixture
def stage(personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=24, tmp_path=tmp_path
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
    return Stage.objects.get(pk=stage.pk)


def test_two_models_four_runs_and_the_reduction_of_each(
    stage, personas, tmp_path, django_capture_on_commit_callbacks
):
    first = stage.evolution.endpoint
    copy = tmp_path / "copy.json"
    shutil.copy(first.script_path, copy)
    second = ModelEndpoint.objects.create(
        name="shortcut-copy", route=ModelEndpoint.SCRIPTED, script_path=str(copy)
    )
    held = set(
        DatasetCase.objects.filter(
            dataset=stage.evolution.dataset, split=DatasetCase.HELDOUT
        ).values_list("case_id", flat=True)
    )
    assert held, "the 24-case world has held-out cases"
    query = f"?stage={stage.pk}&a={first.pk}&b={second.pk}"

    client = client_for(personas.operator)
    page = client.get(f"/edit-benchmark/{query}").content.decode()
    # the stage's own runs scored every case under the evolution's endpoint: reused, two missing
    assert "Evaluate the 2 missing runs" in page and f"run #{stage.parent_run_id}" in page
    before = EvalRun.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/edit-benchmark/start/", {"stage": stage.pk, "a": first.pk, "b": second.pk}
        )
    assert response.status_code == 302 and response.url == f"/edit-benchmark/{query}"
    assert EvalRun.objects.count() == before + 2
    new = EvalRun.objects.order_by("-pk")[:2]
    assert all(set(run.case_ids) == held and run.status == EvalRun.SUCCEEDED for run in new)

    page = client.get(f"/edit-benchmark/{query}").content.decode()
    assert 'id="benchmark-result"' in page
    assert page.count('class="reduction"') == 2
    assert "Difference (shortcut-copy - " in page and "0.0 points" in page  # the same model twice
    assert 'data-judge-status="uncalibrated"' in page


def test_a_stage_without_a_candidate_or_one_model_is_refused(stage, personas):
    client = client_for(personas.operator)
    one = client.get(
        f"/edit-benchmark/?stage={stage.pk}&a={stage.evolution.endpoint_id}&b={stage.evolution.endpoint_id}"
    )
    assert "endpoints: choose two different models" in one.content.decode()
    Stage.objects.filter(pk=stage.pk).update(candidate_version=None)
    none = client.get(f"/edit-benchmark/?stage={stage.pk}&a=1&b=2").content.decode()
    assert "has no committed candidate yet" in none
    assert client_for(personas.outsider).get("/edit-benchmark/").status_code == 403
