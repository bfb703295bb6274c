"""The promotion services: the writes that pass the release gates (``studio.gates``). They sit at
the top of the studio's apps (docs/architecture.md §1): they read the gates, which read every app's
selectors, and they call the harnesses' label moves and the evolution's stage services; only views
(and the API's) import them, so no app imports the gates back.

A stage's decision is carried out here (label moves, the next stage, stop). Promotion to production
must pass the release gates; a gate that failed or has no data blocks it unless the reviewer writes
an override reason, which goes to the audit log (``evolution.gates.override``), to the production
label's move and onto the stage. Promotion to production or stop ends the evolution; another stage
and roll back open the next stage. A release's approval passes the same gates in
``studio.releases.services.release_decide``.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from evaluation.gates import gates_check_promotion
from studio.audit.services import audit_record
from studio.evolution.errors import EvolutionError
from studio.evolution.models import Evolution, Stage
from studio.evolution.services.stages import stage_check_open, stage_open, stage_require
from studio.gates import release_gates, version_release_gates
from studio.harnesses.models import Label
from studio.harnesses.services import (
    StudioError,
    label_check_permission,
    label_move,
    label_rollback,
)


@transaction.atomic
def stage_decide(
    *, stage: Stage, decision: str, actor: User, reason: str = "", override_reason: str = ""
) -> Stage:
    """Record the reviewer's decision and carry it out (label moves, next stage, stop).

    ``override_reason`` is the reviewer's written reason to promote to production although a release
    gate failed or has no data; without it such a promotion is refused, naming the gates.
    """
    stage_require(actor=actor, permission="evolution.review", what="deciding a stage")
    stage_check_open(stage=stage)
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
    (:func:`studio.gates.version_release_gates`). A gate that failed or has no data
    refuses the move (``StudioError`` naming the gates) unless ``override_reason`` says why; the
    override goes into the label move's reason and the audit log (``evolution.gates.override``).
    Returns the gates overridden. Rolling production back (``label_rollback``) is not gated.
    """
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
