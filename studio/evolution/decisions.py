"""The reviewer's writes: accept or reject proposals, open one in the editor, decide a stage.

A decision is carried out here (label moves, the next stage, stop). Promotion
to production must pass the release gates of :mod:`studio.evolution.gates`; a
gate that failed or has no data blocks it unless the reviewer writes an
override reason, which goes to the audit log (``evolution.gates.override``), to
the production label's move and onto the stage. Promotion to production or
stop ends the evolution; another stage and roll back open the next stage.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from studio.audit.services import audit_record
from studio.evolution.errors import EvolutionError
from studio.evolution.models import Evolution, Proposal, Stage
from studio.evolution.stages import (
    stage_accepted_edits,
    stage_check_open,
    stage_draft_with_edits,
    stage_open,
    stage_require,
)
from studio.harnesses.models import Draft, Label
from studio.harnesses.services import (
    StudioError,
    label_check_permission,
    label_move,
    label_rollback,
)


def _check_open_proposal(proposal: Proposal) -> Stage:
    stage = proposal.diagnosis.stage
    stage_check_open(stage)
    if stage.candidate_version_id:
        raise EvolutionError(
            f"stage {stage.number} already has its candidate v{stage.candidate_version.number}"
        )
    return stage


def proposal_review(*, proposal: Proposal, actor: User, accept: bool, reason: str = "") -> Proposal:
    """Accept a valid proposal, or reject one with the reviewer's reason."""
    stage_require(actor, "evolution.review", "accepting or rejecting proposals")
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
    stage_require(actor, "evolution.edit", "editing a proposal in the editor")
    stage = _check_open_proposal(proposal)
    if stage.draft_id and stage.draft.status == Draft.OPEN:
        raise EvolutionError(
            f"stage {stage.number} already has draft #{stage.draft_id} open; edit it there"
        )
    edits = stage_accepted_edits(stage) + (
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
    stage_require(actor, "evolution.review", "rejecting the candidate")
    stage_check_open(stage)
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


@transaction.atomic
def stage_decide(
    *, stage: Stage, decision: str, actor: User, reason: str = "", override_reason: str = ""
) -> Stage:
    """Record the reviewer's decision and carry it out (label moves, next stage, stop).

    ``override_reason`` is the reviewer's written reason to promote to production although a release
    gate failed or has no data; without it such a promotion is refused, naming the gates.
    """
    from studio.evolution.gates import release_gates

    stage_require(actor, "evolution.review", "deciding a stage")
    stage_check_open(stage)
    evolution = stage.evolution
    candidate = stage.candidate_version
    needs_candidate = decision in (Stage.PROMOTE_STAGING, Stage.PROMOTE_PRODUCTION, Stage.ANOTHER)
    if decision not in dict(Stage.DECISIONS):
        raise EvolutionError(
            f"decision: {decision!r} is not one of {', '.join(dict(Stage.DECISIONS))}"
        )
    if needs_candidate and (candidate is None or not stage.comparison):
        raise EvolutionError(
            f"decision: stage {stage.number} has no evaluated "
            f"candidate to {decision.replace('_', ' ')}"
        )
    reason, override_reason = reason.strip(), override_reason.strip()
    gates, overridden = [], []
    try:
        if decision == Stage.PROMOTE_STAGING:
            label_move(
                harness=evolution.harness,
                name=Label.STAGING,
                version=candidate,
                actor=actor,
                reason=reason or f"evolution #{evolution.pk} stage {stage.number}",
            )
        elif decision == Stage.PROMOTE_PRODUCTION:
            gates = release_gates(
                comparison=stage.comparison, tolerance=evolution.tolerance, version=candidate
            )
            overridden = production_promote(
                harness=evolution.harness,
                version=candidate,
                actor=actor,
                reason=reason,
                override_reason=override_reason,
                gates=gates,
                target=f"evolution #{evolution.pk} stage {stage.number}",
            )
        elif decision == Stage.ROLLBACK:
            for label in (
                Label.objects.filter(harness=evolution.harness, version=candidate)
                if candidate
                else []
            ):
                label_rollback(
                    label=label, actor=actor, reason=reason or f"stage {stage.number} rolled back"
                )
    except StudioError as error:
        raise EvolutionError(str(error)) from None
    stage.decision, stage.decision_reason = decision, reason
    stage.decided_by, stage.decided_at = actor, timezone.now()
    stage.gates = [g.to_dict() for g in gates]
    stage.gate_override_reason = override_reason if overridden else ""
    stage.save(
        update_fields=[
            "decision",
            "decision_reason",
            "decided_by",
            "decided_at",
            "gates",
            "gate_override_reason",
        ]
    )
    target = f"evolution #{evolution.pk} stage {stage.number}"
    audit_record(
        actor=actor,
        action=f"evolution.decision.{decision}",
        harness=evolution.harness,
        target=target,
        data={"candidate": candidate.number if candidate else None, "reason": reason},
    )
    if decision == Stage.PROMOTE_PRODUCTION:
        Evolution.objects.filter(pk=evolution.pk).update(status=Evolution.PROMOTED)
        evolution.status = Evolution.PROMOTED
    elif decision == Stage.STOP:
        Evolution.objects.filter(pk=evolution.pk).update(status=Evolution.STOPPED)
        evolution.status = Evolution.STOPPED
    elif decision == Stage.ANOTHER:
        stage_open(
            evolution=evolution, parent=candidate, parent_run=stage.candidate_run, actor=actor
        )
    elif decision == Stage.ROLLBACK:
        stage_open(
            evolution=evolution,
            parent=stage.parent_version,
            parent_run=stage.parent_run,
            actor=actor,
        )
    return stage


@transaction.atomic
def production_promote(
    *,
    harness,
    version,
    actor: User,
    reason: str,
    override_reason: str = "",
    gates: list | None = None,
    target: str = "",
) -> list:
    """Point production at ``version`` through the release gates: the one way a person promotes.

    ``gates`` are the stage's when a stage decides, else the version's own
    (:func:`studio.evolution.gates.version_release_gates`). A gate that failed or has no data
    refuses the move (``StudioError`` naming the gates) unless ``override_reason`` says why; the
    override goes into the label move's reason and the audit log (``evolution.gates.override``).
    Returns the gates overridden. Rolling production back (``label_rollback``) is not gated.
    """
    from evaluation.gates import gates_check_promotion
    from studio.evolution.gates import version_release_gates

    label_check_permission(actor=actor, name=Label.PRODUCTION)
    reason, override_reason = reason.strip(), override_reason.strip()
    if not reason:
        raise StudioError("reason: say why this version goes to production")
    gates = version_release_gates(version=version) if gates is None else gates
    try:
        overridden = gates_check_promotion(gates=gates, override_reason=override_reason)
    except ValueError as refused:
        raise StudioError(str(refused)) from None
    if overridden:
        reason += (
            " (release gates overridden: "
            + ", ".join(f"{g.name} {g.status}" for g in overridden)
            + f"; {override_reason})"
        )
    label_move(harness=harness, name=Label.PRODUCTION, version=version, actor=actor, reason=reason)
    if overridden:
        audit_record(
            actor=actor,
            action="evolution.gates.override",
            harness=harness,
            target=target or f"{harness.name}@production",
            data={
                "version": version.number,
                "reason": override_reason,
                "gates": [g.to_dict() for g in overridden],
            },
        )
    return overridden
