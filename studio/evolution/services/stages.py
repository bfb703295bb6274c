"""Writes of an evolution's stage lifecycle: start an evolution, open a stage, build and evaluate
its candidate.

A stage evaluates its parent version, is diagnosed (:mod:`studio.evolution.services.diagnosis`),
turns the accepted proposals into a candidate version through the studio's own
draft/commit path (``draft_create``, ``draft_file_save``, ``draft_commit``: the same
validation, audit and history as a hand edit), evaluates the candidate on the same
cases and gets its regression report when that run finishes. The reviewer's
decisions are in :mod:`studio.evolution.services.decisions` (its proposals) and
:mod:`studio.promotion` (a stage's decision).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.dispatch import receiver

from studio.accounts.roles import user_can
from studio.audit.services import audit_record
from studio.endpoints.models import ModelEndpoint
from studio.evolution.errors import CandidateExists, EvolutionError
from studio.evolution.models import Dataset, DatasetCase, EvalRun, Evolution, Proposal, Stage
from studio.evolution.services.runs import eval_run_start
from studio.evolution.signals import eval_run_scored
from studio.harnesses.models import Draft, HarnessVersion
from studio.harnesses.selectors import version_files
from studio.harnesses.services import (
    DuplicateVersion,
    StudioError,
    draft_commit,
    draft_create,
    draft_file_save,
)

CLOSING_DECISIONS = (Stage.ANOTHER, Stage.STOP, Stage.ROLLBACK, Stage.PROMOTE_PRODUCTION)


def stage_require(*, actor: User, permission: str, what: str) -> None:
    """PermissionDenied naming the role ``what`` needs (``permission`` is a key of
    accounts.roles.PERMISSIONS)."""
    if not user_can(actor, permission):
        role = {"evolution.review": "reviewer", "evolution.edit": "operator"}.get(
            permission, permission
        )
        raise PermissionDenied(f"{what} needs the {role} role")


def _subset(dataset: Dataset, *, limit: int | None, categories: list[str] | None) -> list[str]:
    rows = DatasetCase.objects.filter(dataset=dataset).order_by("position")
    if categories:
        rows = rows.filter(category__in=categories)
    ids = list(rows.values_list("case_id", flat=True))
    if limit and limit < len(ids):
        # an even spread over the file keeps the category mix of the whole set
        step = len(ids) / limit
        ids = [ids[int(i * step)] for i in range(limit)]
    return ids


@transaction.atomic
def evolution_start(
    *,
    name: str,
    version: HarnessVersion,
    dataset: Dataset,
    endpoint: ModelEndpoint,
    actor: User,
    limit: int | None = None,
    categories: list[str] | None = None,
    diagnoser: str = Evolution.RULE_BASED,
    diagnoser_endpoint: ModelEndpoint | None = None,
    tolerance: float = 0.02,
) -> Evolution:
    """Create an evolution and its first stage, and start evaluating the base version."""
    case_ids = _subset(dataset, limit=limit, categories=categories)
    if not case_ids:
        raise EvolutionError(f"cases: dataset {dataset.name} has no case in the chosen categories")
    if diagnoser == Evolution.LLM:
        from studio.evolution.services.diagnosis import diagnoser_endpoints

        if (
            diagnoser_endpoint is None
            or not diagnoser_endpoints().filter(pk=diagnoser_endpoint.pk).exists()
        ):
            raise EvolutionError(
                "diagnoser_endpoint: the LLM diagnoser needs an OpenAI-compatible endpoint or the "
                "endpoint chosen for the diagnoser role (Endpoints page)"
            )
    if not 0 <= tolerance <= 1:
        raise EvolutionError(f"tolerance: {tolerance} must be between 0 and 1 (0.02 = 2 points)")
    evolution = Evolution.objects.create(
        name=name.strip()[:120] or f"{version} on {dataset.name}",
        harness=version.harness,
        base_version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=case_ids,
        diagnoser=diagnoser,
        diagnoser_endpoint=diagnoser_endpoint if diagnoser == Evolution.LLM else None,
        tolerance=tolerance,
        created_by=actor,
    )
    audit_record(
        actor=actor,
        action="evolution.start",
        harness=version.harness,
        target=f"evolution #{evolution.pk}",
        data={"version": version.number, "dataset": dataset.name, "cases": len(case_ids)},
    )
    stage_open(evolution=evolution, parent=version, parent_run=None, actor=actor)
    return evolution


def stage_open(
    *, evolution: Evolution, parent: HarnessVersion, parent_run: EvalRun | None, actor: User
) -> Stage:
    """The evolution's next stage from ``parent``; ``parent_run`` is reused as its baseline, or one
    is started."""
    number = (
        evolution.stages.order_by("-number").values_list("number", flat=True).first() or 0
    ) + 1
    if parent_run is None:
        parent_run = eval_run_start(
            version=parent,
            dataset=evolution.dataset,
            endpoint=evolution.endpoint,
            case_ids=evolution.case_ids,
            actor=actor,
        )
    return Stage.objects.create(
        evolution=evolution, number=number, parent_version=parent, parent_run=parent_run
    )


def stage_check_open(*, stage: Stage) -> None:
    """EvolutionError unless the evolution is active and the stage has no closing decision."""
    if stage.evolution.status != Evolution.ACTIVE:
        raise EvolutionError(
            f"evolution #{stage.evolution_id} is {stage.evolution.get_status_display()}; "
            "start a new one to continue"
        )
    if stage.decision in CLOSING_DECISIONS:
        raise EvolutionError(f"stage {stage.number} is closed ({stage.get_decision_display()})")


def stage_accepted_edits(*, stage: Stage) -> list[dict]:
    edits: list[dict] = []
    for proposal in Proposal.objects.filter(
        diagnosis__stage=stage, status__in=(Proposal.ACCEPTED, Proposal.EDITED)
    ):
        edits += proposal.edits
    return edits


def stage_draft_with_edits(*, stage: Stage, edits: list[dict], actor: User) -> Draft:
    """A draft of the parent version with ``edits`` applied (EvolutionError if they do not apply
    together)."""
    from evaluation.diagnosis import EditError, apply_edits, edit_from_dict

    parent_files = version_files(version=stage.parent_version)
    try:
        files, _ = apply_edits(parent_files, [edit_from_dict(e) for e in edits])
    except EditError as error:
        raise EvolutionError(f"the accepted edits do not apply together: {error}") from None
    draft = draft_create(
        harness=stage.evolution.harness,
        base_version=stage.parent_version,
        owner=actor,
        title=f"Evolution #{stage.evolution_id} stage {stage.number} candidate",
    )
    for path, text in sorted(files.items()):
        if parent_files.get(path) != text:
            draft = draft_file_save(
                draft=draft, path=path, text=text, base_revision=draft.revision, actor=actor
            ).draft
    return draft


@transaction.atomic
def stage_edit_by_hand(*, stage: Stage, actor: User) -> Draft:
    """The stage's editor draft of its parent version (made once), for a candidate edited by hand
    when the diagnosis proposed nothing; "Commit the candidate" on the stage page then commits and
    evaluates it. Editing is an operator's (the editor saves need ``harness.edit``); a reviewer
    commits the result."""
    stage_require(actor=actor, permission="evolution.edit", what="editing the candidate by hand")
    stage_check_open(stage=stage)
    if stage.candidate_version_id:
        raise EvolutionError(
            f"stage {stage.number} already has its candidate v{stage.candidate_version.number}"
        )
    if stage.draft is not None and stage.draft.status == Draft.OPEN:
        return stage.draft
    stage.draft = draft_create(
        harness=stage.evolution.harness,
        base_version=stage.parent_version,
        owner=actor,
        title=f"Evolution #{stage.evolution_id} stage {stage.number} candidate (by hand)",
    )
    stage.save(update_fields=["draft"])
    return stage.draft


@transaction.atomic
def candidate_build(
    *, stage: Stage, actor: User, message: str = "", existing: int | None = None
) -> Stage:
    """Commit the stage's candidate (its editor draft, or the accepted edits) and start evaluating
    it.

    Where those files are already a version of the Harness (the same fix proposed again after a
    roll-back), :class:`CandidateExists` names it; called again with ``existing`` set to that
    version's number, the stage takes that version as its candidate instead (no new version) and
    evaluates it, reusing a finished run of it on the same cases and endpoint where there is one.
    """
    stage_require(actor=actor, permission="evolution.review", what="committing the candidate")
    stage_check_open(stage=stage)
    if stage.candidate_version_id:
        raise EvolutionError(
            f"stage {stage.number} already has its candidate v{stage.candidate_version.number}"
        )
    titles = list(
        Proposal.objects.filter(
            diagnosis__stage=stage, status__in=(Proposal.ACCEPTED, Proposal.EDITED)
        ).values_list("title", flat=True)
    )
    message = message.strip() or f"Evolution #{stage.evolution_id} stage {stage.number}: " + (
        "; ".join(titles) or "edited by hand"
    )
    draft = stage.draft
    if draft is not None and draft.status == Draft.COMMITTED and draft.committed_version:
        version = draft.committed_version
    else:
        if draft is None or draft.status != Draft.OPEN:
            edits = stage_accepted_edits(stage=stage)
            if not edits:
                raise EvolutionError(
                    "proposals: accept at least one proposal (or edit one in the editor) first"
                )
        try:
            with transaction.atomic():  # a draft made here goes again if its files exist already
                if draft is None or draft.status != Draft.OPEN:
                    draft = stage_draft_with_edits(stage=stage, edits=edits, actor=actor)
                # the reviewer commits the stage's draft whoever edited it (an operator, "Edit in
                # the editor"): deciding the candidate is the reviewer's right here, editing
                # Harnesses is not needed for it
                version = draft_commit(
                    draft=draft,
                    actor=actor,
                    message=message,
                    authorised_as=f"reviewer of evolution #{stage.evolution_id} "
                    f"stage {stage.number}",
                )
        except DuplicateVersion as error:
            if existing != error.version.number:
                raise CandidateExists(version=error.version, stage=stage) from None
            version, draft = error.version, stage.draft
        except StudioError as error:
            raise EvolutionError(f"candidate: {error}") from None
    if existing is not None and version.number != existing:
        raise EvolutionError(
            f"existing: the candidate's files are not v{existing}'s; commit the candidate again"
        )
    stage.draft = draft
    stage.candidate_version = version
    stage.candidate_run = _finished_run(stage=stage, version=version) or eval_run_start(
        version=version,
        dataset=stage.evolution.dataset,
        endpoint=stage.evolution.endpoint,
        case_ids=stage.evolution.case_ids,
        actor=actor,
    )
    stage.save(update_fields=["draft", "candidate_version", "candidate_run"])
    if stage.candidate_run.status == EvalRun.SUCCEEDED:  # reused: its report now
        transaction.on_commit(lambda: stage_run_finished(run_id=stage.candidate_run_id))
    return stage


def _finished_run(*, stage: Stage, version: HarnessVersion) -> EvalRun | None:
    """A succeeded run of ``version`` on the evolution's dataset, endpoint and cases (a version met
    again after a roll-back was evaluated already), else None."""
    evolution = stage.evolution
    for run in EvalRun.objects.filter(
        version=version,
        dataset=evolution.dataset,
        endpoint=evolution.endpoint,
        status=EvalRun.SUCCEEDED,
    ).order_by("-pk"):
        if list(run.case_ids) == list(evolution.case_ids):
            return run
    return None


@receiver(eval_run_scored)
def stage_run_finished(*, run_id: int, **_signal) -> None:
    """When a run has scored its cases (``runs.eval_run_scored``): a stage whose candidate run it
    was gets its regression report."""
    from studio.evolution.comparison import compare_runs

    for stage in Stage.objects.filter(candidate_run_id=run_id).select_related(
        "parent_run", "candidate_run"
    ):
        proposals = [
            {"title": p.title, "target_case_ids": p.target_case_ids}
            for p in Proposal.objects.filter(
                diagnosis__stage=stage, status__in=(Proposal.ACCEPTED, Proposal.EDITED)
            )
        ]
        stage.comparison = compare_runs(
            parent=stage.parent_run, candidate=stage.candidate_run, proposals=proposals
        )
        stage.save(update_fields=["comparison"])
