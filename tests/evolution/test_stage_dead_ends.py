"""A stage whose diagnosis proposed nothing says why and offers the ways on (issue 29, item 4): edit the
parent by hand (the stage's draft becomes its candidate), another diagnoser, or stop the evolution."""

import pytest
from django.urls import reverse
from evolution_testing import client_for
from test_decisions import diagnosed  # noqa: F401 (the fixture: a stage diagnosed on a small world)

from studio.evolution.models import Diagnosis, Evolution, Proposal, Stage

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_proposal(diagnosed):  # noqa: F811 (the imported fixture)
    Proposal.objects.filter(diagnosis__stage=diagnosed).delete()  # a diagnosis that found no edit to propose
    Diagnosis.objects.filter(stage=diagnosed).update(finding="")
    return Stage.objects.get(pk=diagnosed.pk)


def test_no_proposal_says_why_and_offers_a_hand_edit_another_diagnoser_and_stop(no_proposal, personas):
    stage = no_proposal
    diagnosis = stage.diagnoses.get()
    assert diagnosis.status == "succeeded" and diagnosis.failed > 0
    reviewer = client_for(personas.reviewer)
    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="step-no-proposal"' in page
    assert (f"grouped the {diagnosis.failed} failing cases into {len(diagnosis.clusters)} cause" in page
            and "found no Harness edit for them that it could validate" in page)
    assert 'id="edit-by-hand"' in page and 'id="another-diagnoser"' in page and 'id="stop-evolution"' in page

    edit = reviewer.post(f"/evolution/stages/{stage.pk}/edit/")
    stage = Stage.objects.get(pk=stage.pk)
    assert stage.draft is not None and edit.status_code == 302
    assert edit["Location"] == reverse("harnesses:draft_edit", args=[stage.draft.pk])
    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert f"Edit draft #{stage.draft.pk}" in page and 'id="build-candidate"' in page

    reviewer.post(f"/evolution/stages/{stage.pk}/decide/", {"decision": "stop", "reason": "nothing to fix here"})
    assert Evolution.objects.get(pk=stage.evolution_id).status == Evolution.STOPPED
    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="stop-evolution"' not in page  # a stopped evolution offers no way on


def test_an_operator_sees_why_but_no_buttons(no_proposal, personas):
    page = client_for(personas.operator).get(f"/evolution/stages/{no_proposal.pk}/").content.decode()
    assert 'id="no-proposal-reason"' in page and 'id="stop-evolution"' not in page
    assert client_for(personas.operator).post(f"/evolution/stages/{no_proposal.pk}/edit/").status_code == 403
