"""The reviewer's writes on a stage's proposals: accept or reject them, open one in the editor,
reject a candidate. A stage's decision (promote, roll back, another stage, stop) goes through the
release gates, so it is a promotion service: ``studio.promotion.stage_decide``."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from studio.audit.services import audit_record
from studio.evolution.errors import EvolutionError
from studio.evolution.models import Proposal, Stage
from studio.evolution.services.stages import (
    stage_accepted_edits,
    stage_check_open,
    stage_draft_with_edits,
    stage_require,
)
from studio.harnesses.models import Draft


def _check_open_proposal(proposal: Proposal) -> Stage:
    stage = proposal.diagnosis.stage
    stage_check_open(stage=stage)
    if stage.candidate_version_id:
        raise EvolutionError(
            f"stage {stage.number} already has its candidate v{stage.candidate_version.number}"
        )
    return stage


def proposal_review(*, proposal: Proposal, actor: User, accept: bool, reason: str = "") -> Proposal:
    """Accept a valid proposal, or reject one with the reviewer's reason."""
    stage_require(
        actor=actor, permission="evolution.review", what="accepting or rejecting proposals"
    )
    _check_open_proposal(proposal)
    reason = reason.strip()
    if accept and not proposal.valid:
        raise EvolutionError(
            f"proposal {proposal.index + 1}: its edits do not validate "
            f"({'; '.join(proposal.problems)}); reject it or edit it in the editor"
        )
    if not accept and not reason:
        raise EvolutionError("reason: say why the proposal is rejected")
    proposal.status = Proposal.ACCEPTED if accept else Proposal.REJECTED
    proposal.review_reason, proposal.reviewed_by, proposal.reviewed_at = (
        reason,
        actor,
        timezone.now(),
    )
    proposal.save(update_fields=["status", "review_reason", "reviewed_by", "reviewed_at"])
    audit_record(
        actor=actor,
        action=f"evolution.proposal.{proposal.status}",
        harness=proposal.diagnosis.stage.evolution.harness,
        target=f"proposal #{proposal.pk} {proposal.title}",
        data={"reason": reason},
    )
    return proposal


@transaction.atomic
def proposal_edit_in_editor(*, proposal: Proposal, actor: User) -> Draft:
    """Open a draft holding the accepted edits plus this proposal's, for the operator to refine."""
    stage_require(actor=actor, permission="evolution.edit", what="editing a proposal in the editor")
    stage = _check_open_proposal(proposal)
    if stage.draft_id and stage.draft.status == Draft.OPEN:
        raise EvolutionError(
            f"stage {stage.number} already has draft #{stage.draft_id} open; edit it there"
        )
    edits = stage_accepted_edits(stage=stage) + (
        proposal.edits if proposal.status == Proposal.PENDING else []
    )
    draft = stage_draft_with_edits(stage=stage, edits=edits, actor=actor)
    proposal.status, proposal.reviewed_by, proposal.reviewed_at = (
        Proposal.EDITED,
        actor,
        timezone.now(),
    )
    proposal.save(update_fields=["status", "reviewed_by", "reviewed_at"])
    Stage.objects.filter(pk=stage.pk).update(draft=draft)
    audit_record(
        actor=actor,
        action="evolution.proposal.edited",
        harness=stage.evolution.harness,
        target=f"proposal #{proposal.pk}",
        data={"draft": draft.pk},
    )
    return draft


@transaction.atomic
def candidate_reject(*, stage: Stage, actor: User, reason: str) -> Stage:
    """Reject the stage's current candidate, its editor draft as an operator edited it: the
    proposals edited into it are rejected with the reviewer's reason and the stage lets go of the
    draft (it stays its author's to discard or reuse), so the remaining proposals can be reviewed,
    or edited, again."""
    stage_require(actor=actor, permission="evolution.review", what="rejecting the candidate")
    stage_check_open(stage=stage)
    if stage.candidate_version_id:
        raise EvolutionError(
            f"stage {stage.number} already has its candidate v{stage.candidate_version.number}"
        )
    draft = stage.draft
    if draft is None or draft.status != Draft.OPEN:
        raise EvolutionError(
            f"stage {stage.number} has no candidate draft to reject; reject its proposals instead"
        )
    reason = reason.strip()
    if not reason:
        raise EvolutionError("reason: say why the candidate is rejected")
    edited = list(Proposal.objects.filter(diagnosis__stage=stage, status=Proposal.EDITED))
    Proposal.objects.filter(pk__in=[p.pk for p in edited]).update(
        status=Proposal.REJECTED,
        review_reason=reason,
        reviewed_by=actor,
        reviewed_at=timezone.now(),
    )
    Stage.objects.filter(pk=stage.pk).update(draft=None)
    audit_record(
        actor=actor,
        action="evolution.candidate.rejected",
        harness=stage.evolution.harness,
        target=f"stage {stage.number} draft #{draft.pk}",
        data={"reason": reason, "proposals": [p.pk for p in edited]},
    )
    stage.draft = None
    return stage
