"""Issue 51, items 3 and 4: no dead end when a stage's candidate is a version that exists (the same
fix proposed again after a roll-back, or an operator's commit from the editor), and one current
candidate with the reviewer's Accept/Reject once an operator opens a proposal in the editor."""

import pytest
from evolution_testing import client_for
from test_decisions import diagnosed  # noqa: F401 (the fixture: a stage diagnosed on a small world)

from studio.evolution.models import EvalRun, Proposal, Stage
from studio.evolution.services.decisions import proposal_edit_in_editor, proposal_review
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.stages import candidate_build
from studio.harnesses.services import draft_create, draft_file_save
from studio.promotion import stage_decide

pytestmark = pytest.mark.django_db


@pytest.fixture
def rolled_back(diagnosed, personas, django_capture_on_commit_callbacks):  # noqa: F811
    """Stage 1's top proposal committed as v2, evaluated, rolled back; stage 2 (from v1) diagnosed,
    its same top proposal accepted."""
    capture = django_capture_on_commit_callbacks
    top = Proposal.objects.get(diagnosis__stage=diagnosed, index=0)
    proposal_review(proposal=top, actor=personas.reviewer, accept=True)
    with capture(execute=True):
        first = candidate_build(stage=diagnosed, actor=personas.reviewer)
    first = Stage.objects.get(pk=first.pk)
    assert first.comparison and first.candidate_run.status == EvalRun.SUCCEEDED
    with capture(execute=True):
        stage_decide(stage=first, decision=Stage.ROLLBACK, actor=personas.reviewer)
    second = first.evolution.stages.get(number=2)
    with capture(execute=True):
        diagnosis_start(stage=second, actor=personas.reviewer)
    again = Proposal.objects.get(diagnosis__stage=second, index=0)
    assert again.edits == top.edits  # the same fix, proposed again
    proposal_review(proposal=again, actor=personas.reviewer, accept=True)
    return Stage.objects.get(pk=second.pk), first.candidate_version


def test_committing_a_candidate_that_exists_offers_it_and_takes_it_as_the_candidate(
    rolled_back, personas, django_capture_on_commit_callbacks
):
    stage, v2 = rolled_back
    reviewer = client_for(personas.reviewer)
    response = reviewer.post(f"/evolution/stages/{stage.pk}/candidate/", {"message": ""})
    assert response.status_code == 302
    assert response.url == f"/evolution/stages/{stage.pk}/?existing={v2.number}#existing-version"
    assert Stage.objects.get(pk=stage.pk).candidate_version is None  # nothing half-saved
    page = reviewer.get(response.url).content.decode()
    assert f"these edits give {v2.harness.name} v{v2.number}, which already exists" in page
    assert 'id="existing-version"' in page and 'id="use-existing"' in page
    assert "its run is reused" in page and 'id="promote-existing"' in page
    operator_page = client_for(personas.operator).get(response.url).content.decode()
    assert 'id="existing-by-reviewer"' in operator_page and 'id="use-existing"' not in operator_page

    with django_capture_on_commit_callbacks(execute=True):
        taken = reviewer.post(
            f"/evolution/stages/{stage.pk}/candidate/", {"message": "", "existing": v2.number}
        )
    assert taken.status_code == 302
    stage = Stage.objects.get(pk=stage.pk)
    assert stage.candidate_version_id == v2.pk
    assert stage.candidate_run.status == EvalRun.SUCCEEDED and stage.comparison  # reused, reported
    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert 'id="regression-report"' in page and 'id="step-decide"' in page  # promote from here


def test_an_existing_number_that_is_not_the_candidates_files_is_refused(rolled_back, personas):
    stage, v2 = rolled_back
    response = client_for(personas.reviewer).post(
        f"/evolution/stages/{stage.pk}/candidate/", {"message": "", "existing": 1}
    )
    assert response.status_code == 302 and "existing=" in response.url  # offered v2, not v1
    assert Stage.objects.get(pk=stage.pk).candidate_version is None
    bad = client_for(personas.reviewer).post(
        f"/evolution/stages/{stage.pk}/candidate/", {"message": "", "existing": "two"}
    )
    messages = [str(m) for m in bad.wsgi_request._messages]
    assert any(m.startswith("existing:") for m in messages), messages


def test_the_operators_commit_from_the_editor_offers_the_existing_version(rolled_back, personas):
    stage, v2 = rolled_back
    from studio.harnesses.selectors import version_files

    draft = draft_create(
        harness=v2.harness, base_version=stage.parent_version, owner=personas.operator, title="t"
    )
    for path, text in version_files(version=v2).items():
        if version_files(version=stage.parent_version).get(path) != text:
            draft = draft_file_save(
                draft=draft,
                path=path,
                text=text,
                base_revision=draft.revision,
                actor=personas.operator,
            ).draft
    operator = client_for(personas.operator)
    response = operator.post(f"/drafts/{draft.pk}/commit/", {"message": "again"})
    assert response.url == f"/drafts/{draft.pk}/changes/?existing={v2.number}#existing-version"
    page = operator.get(response.url).content.decode()
    assert "Nothing new to commit" in page and 'id="existing-version"' in page
    assert f'href="/evolution/new/?version={v2.pk}"' in page and 'id="promote-existing"' in page


def test_a_reviewer_accepts_or_rejects_the_one_current_candidate_an_operator_edited(
    diagnosed,  # noqa: F811
    personas,
):
    top = Proposal.objects.get(diagnosis__stage=diagnosed, index=0)
    draft = proposal_edit_in_editor(proposal=top, actor=personas.operator)
    path = "skills/item_qa/SKILL.md"
    draft_file_save(
        draft=draft,
        path=path,
        text=draft.files[path] + "\n- Quote the tool's price exactly. {#quote-exactly}\n",
        base_revision=draft.revision,
        actor=personas.operator,
    )
    reviewer = client_for(personas.reviewer)
    page = reviewer.get(f"/evolution/stages/{diagnosed.pk}/").content.decode()
    edited = page[page.index('id="proposal-1"') : page.index('id="draft-diff"')]
    assert '<pre class="udiff">' not in edited and "current candidate" in edited
    candidate = page[page.index('id="draft-diff"') : page.index('id="candidate-decision"')]
    assert "Quote the tool&#x27;s price exactly." in candidate  # that change's one diff: as edited
    assert 'id="candidate-decision"' in page and 'id="reject-candidate"' in page
    assert 'id="build-candidate"' in page and "Accept: commit and evaluate it" in page

    refused = reviewer.post(f"/evolution/stages/{diagnosed.pk}/candidate/reject/", {"reason": " "})
    assert any(str(m).startswith("reason:") for m in refused.wsgi_request._messages)
    assert Stage.objects.get(pk=diagnosed.pk).draft_id == draft.pk
    assert (
        client_for(personas.operator)
        .post(f"/evolution/stages/{diagnosed.pk}/candidate/reject/", {"reason": "no"})
        .status_code
        == 403
    )
    reviewer.post(
        f"/evolution/stages/{diagnosed.pk}/candidate/reject/", {"reason": "quote is not the fix"}
    )
    stage = Stage.objects.get(pk=diagnosed.pk)
    top.refresh_from_db()
    assert stage.draft is None and top.status == Proposal.REJECTED
    assert top.review_reason == "quote is not the fix"
    page = reviewer.get(f"/evolution/stages/{diagnosed.pk}/").content.decode()
    assert 'id="candidate-decision"' not in page and 'data-status="rejected"' in page
    assert "“quote is not the fix” — rafael" in page
