"""Writes of the evolution loop: datasets, evolutions, stages, diagnoses, proposals, decisions.

Views parse and authorise, then call one function here. The evaluation run
job lives in :mod:`studio.evolution.runs`; the regression report in
:mod:`studio.evolution.comparison`; release gates and stopping advice in
:mod:`studio.evolution.gates`. Accepted edits become a candidate version
through the studio's own draft/commit path (``draft_create``,
``draft_file_save``, ``draft_commit``) so validation, audit and history are
the same as for a hand edit.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone

from studio.audit.services import audit_record
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import (
    CaseResult,
    Dataset,
    DatasetCase,
    Diagnosis,
    EvalRun,
    Evolution,
    Proposal,
    Stage,
)
from studio.evolution.runs import eval_run_start
from studio.harnesses.models import Draft, HarnessVersion, Label
from studio.harnesses.selectors import version_files
from studio.harnesses.services import (
    StudioError,
    draft_commit,
    draft_create,
    draft_file_save,
    label_move,
    label_rollback,
)
from studio.jobs.services import job_create


class EvolutionError(ValueError):
    """A user error in the evolution loop; the message names the field and what is valid."""


# --- datasets -----------------------------------------------------------------------


def _split_of(case_id: str, heldout_share: float) -> str:
    bucket = int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return DatasetCase.HELDOUT if bucket < heldout_share else DatasetCase.DEV


def _comment_of(case: dict) -> str:
    from evaluation.diagnosis.records import comment_text

    return comment_text(case)[:500]


@transaction.atomic
def dataset_import(
    *, name: str, text: str, source: str, actor: User | None, catalogue: dict | None = None,
    description: str = "", heldout_share: float = 0.2,
) -> Dataset:
    """Import a JSONL case file all or nothing; bad lines raise CaseFileError with their line numbers."""
    from evaluation.cases import parse_cases
    from harness.livestream import Catalogue, DocumentValidationError

    name = name.strip().lower()
    if not name or len(name) > 80 or not all(c.isalnum() or c in "-_" for c in name):
        raise EvolutionError("name: use 1-80 letters, digits, '-' or '_' (e.g. dev-482)")
    if Dataset.objects.filter(name=name).exists():
        raise EvolutionError(f"name: a dataset called {name!r} exists already; pick another name")
    if not 0 <= heldout_share <= 0.5:
        raise EvolutionError(f"heldout_share: {heldout_share} must be between 0 and 0.5")
    if catalogue is not None:
        try:
            Catalogue.from_dict(catalogue, source=f"{source} catalogue")
        except DocumentValidationError as error:
            raise EvolutionError(f"catalogue: {error}") from None
    lines = text.splitlines()
    cases = parse_cases(lines, source=source)
    numbers = [i for i, line in enumerate(lines, 1) if line.strip()]
    dataset = Dataset.objects.create(name=name, description=description, source=source, catalogue=catalogue,
                                     heldout_share=heldout_share, case_count=len(cases), created_by=actor)
    DatasetCase.objects.bulk_create([
        DatasetCase(dataset=dataset, case_id=case["id"], position=i, line=numbers[i - 1],
                    category=case["category"], split=_split_of(case["id"], heldout_share),
                    comment=_comment_of(case), data=case)
        for i, case in enumerate(cases, 1)
    ], batch_size=500)
    audit_record(actor=actor, action="evolution.dataset.import", target=f"dataset {name}",
                 data={"cases": len(cases), "source": source})
    return dataset


# --- evolutions and stages ------------------------------------------------------------


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
    *, name: str, version: HarnessVersion, dataset: Dataset, endpoint: ModelEndpoint, actor: User,
    limit: int | None = None, categories: list[str] | None = None, diagnoser: str = Evolution.RULE_BASED,
    diagnoser_endpoint: ModelEndpoint | None = None, tolerance: float = 0.02,
) -> Evolution:
    """Create an evolution and its first stage, and start evaluating the base version."""
    case_ids = _subset(dataset, limit=limit, categories=categories)
    if not case_ids:
        raise EvolutionError(f"cases: dataset {dataset.name} has no case in the chosen categories")
    if diagnoser == Evolution.LLM and (diagnoser_endpoint is None or diagnoser_endpoint.route != ModelEndpoint.OPENAI):
        raise EvolutionError("diagnoser_endpoint: the LLM diagnoser needs an OpenAI-compatible endpoint")
    if not 0 <= tolerance <= 1:
        raise EvolutionError(f"tolerance: {tolerance} must be between 0 and 1 (0.02 = 2 points)")
    evolution = Evolution.objects.create(
        name=name.strip()[:120] or f"{version} on {dataset.name}", harness=version.harness, base_version=version,
        dataset=dataset, endpoint=endpoint, case_ids=case_ids, diagnoser=diagnoser,
        diagnoser_endpoint=diagnoser_endpoint if diagnoser == Evolution.LLM else None, tolerance=tolerance,
        created_by=actor)
    audit_record(actor=actor, action="evolution.start", harness=version.harness, target=f"evolution #{evolution.pk}",
                 data={"version": version.number, "dataset": dataset.name, "cases": len(case_ids)})
    _stage_open(evolution=evolution, parent=version, parent_run=None, actor=actor)
    return evolution


def _stage_open(*, evolution: Evolution, parent: HarnessVersion, parent_run: EvalRun | None, actor: User) -> Stage:
    number = (evolution.stages.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    if parent_run is None:
        parent_run = eval_run_start(version=parent, dataset=evolution.dataset, endpoint=evolution.endpoint,
                                    case_ids=evolution.case_ids, actor=actor)
    return Stage.objects.create(evolution=evolution, number=number, parent_version=parent, parent_run=parent_run)


def _check_active(stage: Stage) -> None:
    if stage.evolution.status != Evolution.ACTIVE:
        raise EvolutionError(f"evolution #{stage.evolution_id} is stopped; start a new one to continue")
    if stage.decision in (Stage.ANOTHER, Stage.STOP, Stage.ROLLBACK):
        raise EvolutionError(f"stage {stage.number} is closed ({stage.get_decision_display()})")


# --- diagnosis and proposals -----------------------------------------------------------


@transaction.atomic
def diagnosis_start(*, stage: Stage, actor: User) -> Diagnosis:
    """Queue a diagnosis of the parent run's dev-split failures."""
    _check_active(stage)
    run = stage.parent_run
    if run is None or run.status != EvalRun.SUCCEEDED:
        raise EvolutionError(f"stage {stage.number}: the parent version has not finished its evaluation")
    if stage.candidate_version_id:
        raise EvolutionError(f"stage {stage.number} already has a candidate; decide, then start another stage")
    evolution = stage.evolution
    name = evolution.diagnoser if evolution.diagnoser == Evolution.RULE_BASED else \
        f"llm:{evolution.diagnoser_endpoint.model}"
    diagnosis = Diagnosis.objects.create(stage=stage, run=run, diagnoser=name, created_by=actor)
    job = job_create(kind="evolution_diagnose", title=f"Diagnose {stage} ({name})",
                     params={"diagnosis_id": diagnosis.pk}, created_by=actor)
    Diagnosis.objects.filter(pk=diagnosis.pk).update(job=job)
    diagnosis.job = job
    return diagnosis


def _diagnoser_for(evolution: Evolution):
    from evaluation.diagnosis import LLMDiagnoser, RuleBasedDiagnoser

    if evolution.diagnoser == Evolution.LLM:
        endpoint = evolution.diagnoser_endpoint
        return LLMDiagnoser(base_url=endpoint.base_url, model=endpoint.model, api_key_env=endpoint.api_key_env)
    return RuleBasedDiagnoser()


def diagnosis_execute(*, diagnosis_id: int, log) -> dict[str, Any]:
    """The diagnosis job's body: cluster dev-split failures, propose and validate edits, store them."""
    from evaluation.diagnosis import diagnose, failures_from_results

    diagnosis = Diagnosis.objects.select_related("stage__evolution", "run__version").get(pk=diagnosis_id)
    Diagnosis.objects.filter(pk=diagnosis.pk).update(status=EvalRun.RUNNING)
    try:
        results = list(CaseResult.objects.filter(run=diagnosis.run, split=DatasetCase.DEV).values(
            "case_id", "category", "accuracy", "effectiveness", "verdict", "reply", "route", "trajectory"))
        rows = [{**r, "reasons": r["verdict"].get("reasons", [])} for r in results]
        cases = {c.case_id: c.data for c in DatasetCase.objects.filter(
            dataset=diagnosis.run.dataset, case_id__in=[r["case_id"] for r in rows])}
        failures = failures_from_results(results=rows, cases=cases)
        log(f"{len(failures)} of {len(rows)} dev-split case(s) failed; held-out cases are left out of diagnosis")
        found = diagnose(failures=failures, total=len(rows), files=version_files(version=diagnosis.run.version),
                         diagnoser=_diagnoser_for(diagnosis.stage.evolution))
    except Exception as error:
        Diagnosis.objects.filter(pk=diagnosis.pk).update(status=EvalRun.FAILED, error=f"{type(error).__name__}: {error}")
        raise
    with transaction.atomic():
        Proposal.objects.bulk_create([
            Proposal(diagnosis=diagnosis, index=i, title=p.title, rationale=p.rationale, reason=p.reason,
                     diagnoser=p.diagnoser, target_case_ids=p.target_case_ids,
                     edits=[e.to_dict() for e in p.edits], valid=p.valid, problems=p.problems, diff=p.diff,
                     summary=p.summary)
            for i, p in enumerate(found.proposals)
        ])
        Diagnosis.objects.filter(pk=diagnosis.pk).update(
            status=EvalRun.SUCCEEDED, total=found.total, failed=found.failed,
            clusters=[c.to_dict() for c in found.clusters])
    log(f"{len(found.clusters)} cluster(s), {len(found.proposals)} proposal(s) "
        f"({sum(p.valid for p in found.proposals)} valid)")
    return {"clusters": len(found.clusters), "proposals": len(found.proposals), "failed": found.failed}


def _check_review(actor: User) -> None:
    from studio.evolution.permissions import evolution_can

    if not evolution_can(actor, "evolution.review"):
        raise PermissionDenied("accepting or rejecting proposals needs the reviewer role")


def _check_open_proposal(proposal: Proposal) -> Stage:
    stage = proposal.diagnosis.stage
    _check_active(stage)
    if stage.candidate_version_id:
        raise EvolutionError(f"stage {stage.number} already has its candidate v{stage.candidate_version.number}")
    return stage


def proposal_review(*, proposal: Proposal, actor: User, accept: bool, reason: str = "") -> Proposal:
    """Accept a valid proposal, or reject one with the reviewer's reason."""
    _check_review(actor)
    _check_open_proposal(proposal)
    reason = reason.strip()
    if accept and not proposal.valid:
        raise EvolutionError(f"proposal {proposal.index + 1}: its edits do not validate "
                             f"({'; '.join(proposal.problems)}); reject it or edit it in the editor")
    if not accept and not reason:
        raise EvolutionError("reason: say why the proposal is rejected")
    proposal.status = Proposal.ACCEPTED if accept else Proposal.REJECTED
    proposal.review_reason, proposal.reviewed_by, proposal.reviewed_at = reason, actor, timezone.now()
    proposal.save(update_fields=["status", "review_reason", "reviewed_by", "reviewed_at"])
    audit_record(actor=actor, action=f"evolution.proposal.{proposal.status}",
                 harness=proposal.diagnosis.stage.evolution.harness,
                 target=f"proposal #{proposal.pk} {proposal.title}", data={"reason": reason})
    return proposal


def _accepted_edits(stage: Stage) -> list[dict]:
    edits: list[dict] = []
    for proposal in Proposal.objects.filter(diagnosis__stage=stage, status__in=(Proposal.ACCEPTED, Proposal.EDITED)):
        edits += proposal.edits
    return edits


def _draft_with_edits(*, stage: Stage, edits: list[dict], actor: User) -> Draft:
    from evaluation.diagnosis import EditError, apply_edits, edit_from_dict

    parent_files = version_files(version=stage.parent_version)
    try:
        files, _ = apply_edits(parent_files, [edit_from_dict(e) for e in edits])
    except EditError as error:
        raise EvolutionError(f"the accepted edits do not apply together: {error}") from None
    draft = draft_create(harness=stage.evolution.harness, base_version=stage.parent_version, owner=actor,
                         title=f"Evolution #{stage.evolution_id} stage {stage.number} candidate")
    for path, text in sorted(files.items()):
        if parent_files.get(path) != text:
            draft = draft_file_save(draft=draft, path=path, text=text, base_revision=draft.revision,
                                    actor=actor).draft
    return draft


@transaction.atomic
def proposal_edit_in_editor(*, proposal: Proposal, actor: User) -> Draft:
    """Open a draft holding the accepted edits plus this proposal's, for the operator to refine."""
    from studio.evolution.permissions import evolution_can

    if not evolution_can(actor, "evolution.edit"):
        raise PermissionDenied("editing a proposal in the editor needs the operator role")
    stage = _check_open_proposal(proposal)
    if stage.draft_id and stage.draft.status == Draft.OPEN:
        raise EvolutionError(f"stage {stage.number} already has draft #{stage.draft_id} open; edit it there")
    edits = _accepted_edits(stage) + (proposal.edits if proposal.status == Proposal.PENDING else [])
    draft = _draft_with_edits(stage=stage, edits=edits, actor=actor)
    proposal.status, proposal.reviewed_by, proposal.reviewed_at = Proposal.EDITED, actor, timezone.now()
    proposal.save(update_fields=["status", "reviewed_by", "reviewed_at"])
    Stage.objects.filter(pk=stage.pk).update(draft=draft)
    audit_record(actor=actor, action="evolution.proposal.edited", harness=stage.evolution.harness,
                 target=f"proposal #{proposal.pk}", data={"draft": draft.pk})
    return draft


@transaction.atomic
def candidate_build(*, stage: Stage, actor: User, message: str = "") -> Stage:
    """Commit the stage's candidate (its editor draft, or the accepted edits) and start evaluating it."""
    _check_review(actor)
    _check_active(stage)
    if stage.candidate_version_id:
        raise EvolutionError(f"stage {stage.number} already has its candidate v{stage.candidate_version.number}")
    titles = list(Proposal.objects.filter(diagnosis__stage=stage, status__in=(Proposal.ACCEPTED, Proposal.EDITED))
                  .values_list("title", flat=True))
    message = message.strip() or f"Evolution #{stage.evolution_id} stage {stage.number}: " + (
        "; ".join(titles) or "edited by hand")
    draft = stage.draft
    if draft is not None and draft.status == Draft.COMMITTED and draft.committed_version:
        version = draft.committed_version
    else:
        if draft is None or draft.status != Draft.OPEN:
            edits = _accepted_edits(stage)
            if not edits:
                raise EvolutionError("proposals: accept at least one proposal (or edit one in the editor) first")
            draft = _draft_with_edits(stage=stage, edits=edits, actor=actor)
        try:
            version = draft_commit(draft=draft, actor=actor, message=message)
        except StudioError as error:
            raise EvolutionError(f"candidate: {error}") from None
    stage.draft = draft
    stage.candidate_version = version
    stage.candidate_run = eval_run_start(version=version, dataset=stage.evolution.dataset,
                                         endpoint=stage.evolution.endpoint, case_ids=stage.evolution.case_ids,
                                         actor=actor)
    stage.save(update_fields=["draft", "candidate_version", "candidate_run"])
    return stage


def stage_run_finished(*, run_id: int) -> None:
    """Called when a run succeeds: a stage whose candidate run it was gets its regression report."""
    from studio.evolution.comparison import compare_runs

    for stage in Stage.objects.filter(candidate_run_id=run_id).select_related("parent_run", "candidate_run"):
        proposals = [{"title": p.title, "target_case_ids": p.target_case_ids}
                     for p in Proposal.objects.filter(diagnosis__stage=stage,
                                                      status__in=(Proposal.ACCEPTED, Proposal.EDITED))]
        stage.comparison = compare_runs(parent=stage.parent_run, candidate=stage.candidate_run, proposals=proposals)
        stage.save(update_fields=["comparison"])


# --- decisions -----------------------------------------------------------------------------


@transaction.atomic
def stage_decide(*, stage: Stage, decision: str, actor: User, reason: str = "") -> Stage:
    """Record the reviewer's decision and carry it out (label moves, next stage, stop)."""
    from studio.evolution.gates import release_gates

    _check_review(actor)
    _check_active(stage)
    evolution = stage.evolution
    candidate = stage.candidate_version
    needs_candidate = decision in (Stage.PROMOTE_STAGING, Stage.PROMOTE_PRODUCTION, Stage.ANOTHER)
    if decision not in dict(Stage.DECISIONS):
        raise EvolutionError(f"decision: {decision!r} is not one of {', '.join(dict(Stage.DECISIONS))}")
    if needs_candidate and (candidate is None or not stage.comparison):
        raise EvolutionError(f"decision: stage {stage.number} has no evaluated candidate to {decision.replace('_', ' ')}")
    try:
        if decision == Stage.PROMOTE_STAGING:
            label_move(harness=evolution.harness, name=Label.STAGING, version=candidate, actor=actor,
                       reason=reason or f"evolution #{evolution.pk} stage {stage.number}")
        elif decision == Stage.PROMOTE_PRODUCTION:
            failing = [g for g in release_gates(comparison=stage.comparison, tolerance=evolution.tolerance)
                       if g.status == "fail"]
            if failing:
                raise EvolutionError("release gates failed: " + "; ".join(f"{g.name}: {g.detail}" for g in failing))
            label_move(harness=evolution.harness, name=Label.PRODUCTION, version=candidate, actor=actor,
                       reason=reason)
        elif decision == Stage.ROLLBACK:
            for label in Label.objects.filter(harness=evolution.harness, version=candidate) if candidate else []:
                label_rollback(label=label, actor=actor, reason=reason or f"stage {stage.number} rolled back")
    except StudioError as error:
        raise EvolutionError(str(error)) from None
    stage.decision, stage.decision_reason = decision, reason.strip()
    stage.decided_by, stage.decided_at = actor, timezone.now()
    stage.save(update_fields=["decision", "decision_reason", "decided_by", "decided_at"])
    audit_record(actor=actor, action=f"evolution.decision.{decision}", harness=evolution.harness,
                 target=f"evolution #{evolution.pk} stage {stage.number}",
                 data={"candidate": candidate.number if candidate else None, "reason": reason})
    if decision == Stage.STOP:
        Evolution.objects.filter(pk=evolution.pk).update(status=Evolution.STOPPED)
    elif decision == Stage.ANOTHER:
        _stage_open(evolution=evolution, parent=candidate, parent_run=stage.candidate_run, actor=actor)
    elif decision == Stage.ROLLBACK:
        _stage_open(evolution=evolution, parent=stage.parent_version, parent_run=stage.parent_run, actor=actor)
    return stage


def dataset_catalogue_from_text(text: str, *, source: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise EvolutionError(f"{source}:{error.lineno}: catalogue is not valid JSON ({error.msg})") from None
    if not isinstance(data, dict):
        raise EvolutionError(f"{source}: catalogue must be a JSON object with products, promotions, faq")
    return data

