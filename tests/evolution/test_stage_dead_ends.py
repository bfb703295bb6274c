"""A stage whose diagnosis proposed nothing says why and offers the ways on (issue 29, item 4): edit
the parent by hand (the stage's draft becomes its candidate), another diagnoser, or stop the
evolution."""

import pytest
from django.urls import reverse
from evolution_testing import client_for
from test_decisions import diagnosed  # noqa: F401 (the fixture: a stage diagnosed on a small world)

from studio.evolution.models import Diagnosis, Evolution, Proposal, Stage

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_proposal(diagnosed):  # noqa: F811 (the imported fixture)
    Proposal.objects.filter(
        diagnosis__stage=diagnosed
    ).delete()  # a diagnosis that found no edit to propose
    Diagnosis.objects.filter(stage=diagnosed).update(finding="")
    return Stage.objects.get(pk=diagnosed.pk)


def test_no_proposal_says_why_and_offers_each_role_only_what_it_may_do(no_proposal, personas):
    """Issue 38, item 5: the hand edit is the operator's (the editor's saves need harness.edit; a
    reviewer's were a 403), committing the candidate and stopping are the reviewer's."""
    stage = no_proposal
    diagnosis = stage.diagnoses.get()
    assert diagnosis.status == "succeeded" and diagnosis.failed > 0
    reviewer, operator = client_for(personas.reviewer), client_for(personas.operator)
    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="step-no-proposal"' in page
    assert (
        f"grouped the {diagnosis.failed} failing cases into {len(diagnosis.clusters)} cause" in page
        and "found no Harness edit for them that it could validate" in page
    )
    assert 'id="edit-by-hand"' not in page and 'id="edit-by-operator"' in page
    assert 'id="another-diagnoser"' in page and 'id="stop-evolution"' in page
    assert reviewer.post(f"/evolution/stages/{stage.pk}/edit/").status_code == 403

    page = operator.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="edit-by-hand"' in page and 'id="stop-evolution"' not in page
    edit = operator.post(f"/evolution/stages/{stage.pk}/edit/")
    stage = Stage.objects.get(pk=stage.pk)
    assert stage.draft is not None and edit.status_code == 302
    assert edit["Location"] == reverse("harnesses:draft_edit", args=[stage.draft.pk])
    path = "skills/item_qa/SKILL.md"
    text = (
        stage.draft.files[path]
        + "\n- Say the price only after get_product_info. {#price-after-tool}\n"
    )
    saved = operator.post(
        reverse("harnesses:draft_save", args=[stage.draft.pk]),
        {"path": path, "revision": stage.draft.revision, "text": text},
    )
    assert (
        saved.status_code == 302
        and "price-after-tool" in Stage.objects.get(pk=stage.pk).draft.files[path]
    )
    page = operator.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="candidate-by-reviewer"' in page and 'id="build-candidate"' not in page

    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert f"Read draft #{stage.draft.pk}" in page and 'id="build-candidate"' in page
    reviewer.post(
        f"/evolution/stages/{stage.pk}/decide/",
        {"decision": "stop", "reason": "nothing to fix here"},
    )
    assert Evolution.objects.get(pk=stage.evolution_id).status == Evolution.STOPPED
    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="stop-evolution"' not in page  # a stopped evolution offers no way on


def test_the_reviewer_commits_the_operators_hand_edit_as_the_candidate(
    no_proposal, personas, django_capture_on_commit_callbacks
):
    stage = no_proposal
    client_for(personas.operator).post(f"/evolution/stages/{stage.pk}/edit/")
    draft = Stage.objects.get(pk=stage.pk).draft
    path = "skills/item_qa/SKILL.md"
    client_for(personas.operator).post(
        reverse("harnesses:draft_save", args=[draft.pk]),
        {
            "path": path,
            "revision": draft.revision,
            "text": draft.files[path] + "\n- Quote prices exactly. {#quote}\n",
        },
    )
    with django_capture_on_commit_callbacks(execute=True):
        client_for(personas.reviewer).post(f"/evolution/stages/{stage.pk}/candidate/")
    stage = Stage.objects.get(pk=stage.pk)
    assert (
        stage.candidate_version is not None and stage.candidate_version.author == personas.reviewer
    )


def test_a_no_proposal_stage_offers_the_planted_defect_scenario(no_proposal, personas, demo_files):
    from studio.evolution.models import Dataset
    from studio.evolution.services.seeding import PLANTED_LABEL, SHORTCUT_ENDPOINT
    from studio.harnesses.services import harness_version_create, label_move

    stage = no_proposal
    page = client_for(personas.reviewer).get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="planted-way"' not in page  # not seeded: nothing to offer
    harness = stage.evolution.harness
    other = harness_version_create(
        harness=harness,
        files=demo_files,
        author=personas.admin,
        message="other",
        parent=stage.parent_version,
    )
    label_move(
        harness=harness, name=PLANTED_LABEL, version=other, actor=personas.admin, reason="demo"
    )
    Dataset.objects.create(name="dev-482")
    stage.evolution.endpoint.__class__.objects.create(
        name=SHORTCUT_ENDPOINT, route="scripted", script_path="/x"
    )
    page = client_for(personas.reviewer).get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert (
        'id="planted-way"' in page
        and f"start an evolution from {harness.name} v{other.number}" in page
    )
    label_move(
        harness=harness,
        name=PLANTED_LABEL,
        version=stage.parent_version,
        actor=personas.admin,
        reason="x",
    )
    page = client_for(personas.reviewer).get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="planted-way"' not in page  # this stage already starts from it
