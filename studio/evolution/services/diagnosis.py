"""The diagnosis of a stage: queue it as a job, and the job's body (cluster failures, propose
validated edits).

Only the parent run's dev-split failures are diagnosed; held-out cases stay
unseen so the regression report can tell whether an edit generalises. Each
valid proposal is replayed on its targeted cases with the run's endpoint and
catalogue through the one case scorer before a reviewer sees it, so the page
shows "fixes N of M targeted cases (predicted)" beside the diff. The
clustering, the edits and the diagnosers are the pure library
:mod:`evaluation.diagnosis`; this module stores what it found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction

from harness.policies.factory import spec_label
from studio.endpoints.models import ModelEndpoint
from studio.evolution.errors import EvolutionError
from studio.evolution.models import (
    CaseResult,
    DatasetCase,
    Diagnosis,
    EvalRun,
    Evolution,
    Proposal,
    Stage,
)
from studio.evolution.services.stages import stage_check_open
from studio.harnesses.selectors import version_files
from studio.jobs.services import job_create


@transaction.atomic
def diagnosis_start(*, stage: Stage, actor: User) -> Diagnosis:
    """Queue a diagnosis of the parent run's dev-split failures."""
    stage_check_open(stage=stage)
    run = stage.parent_run
    if run is None or run.status != EvalRun.SUCCEEDED:
        raise EvolutionError(
            f"stage {stage.number}: the parent version has not finished its evaluation"
        )
    if stage.candidate_version_id:
        raise EvolutionError(
            f"stage {stage.number} already has a candidate; decide, then start another stage"
        )
    evolution = stage.evolution
    name = (
        evolution.diagnoser
        if evolution.diagnoser == Evolution.RULE_BASED
        else f"llm:{spec_label(evolution.diagnoser_endpoint.policy_spec)}"
    )
    diagnosis = Diagnosis.objects.create(stage=stage, run=run, diagnoser=name, created_by=actor)
    job = job_create(
        kind="evolution_diagnose",
        title=f"Diagnose {stage} ({name})",
        params={"diagnosis_id": diagnosis.pk},
        created_by=actor,
    )
    Diagnosis.objects.filter(pk=diagnosis.pk).update(job=job)
    diagnosis.job = job
    return diagnosis


@dataclass(frozen=True)
class DiagnoserOption:
    """One diagnoser as the evolution form shows it: whether it can run here, and why (not)."""

    value: str
    label: str
    usable: bool
    why: str


def diagnoser_endpoints():
    """The endpoints the LLM diagnoser may call: every OpenAI-compatible one, and the endpoint the
    registry chose for the diagnoser role (``RoleEndpoint``), whatever its route, the local one
    included."""
    from django.db.models import Q

    return ModelEndpoint.objects.filter(
        Q(route=ModelEndpoint.OPENAI) | Q(roles__role="diagnoser")
    ).distinct()


def diagnoser_endpoint_problem(*, endpoint: ModelEndpoint) -> str:
    """Why an endpoint cannot serve the LLM diagnoser now, or ""."""
    if endpoint.route != ModelEndpoint.OPENAI:
        return "" if endpoint.model else f"{endpoint.name} names no model"
    if not endpoint.base_url or not endpoint.model:
        return f"{endpoint.name} has no base URL or model name"
    from studio.endpoints.services import EndpointError, endpoint_api_key

    try:
        key = endpoint_api_key(endpoint=endpoint)
    except EndpointError as error:
        return str(error)
    if endpoint.api_key_secret is not None and key is None:
        return (
            f"{endpoint.name}'s endpoint secret {endpoint.api_key_secret.name} "
            "has no key here (its variable is unset)"
        )
    if endpoint.last_check_ok is False:
        return f"{endpoint.name}'s last connection test failed: {endpoint.last_check_message[:200]}"
    return ""


def diagnoser_options() -> list[DiagnoserOption]:
    """The diagnosers and whether each is usable with the endpoints configured now (read before
    anything runs)."""
    rule = DiagnoserOption(
        Evolution.RULE_BASED,
        "rule-based (offline)",
        True,
        "needs no endpoint: maps the judges' reason codes to edits that the failing "
        "trajectories back, and says when the failures are the model's, not the Harness's",
    )
    endpoints = list(diagnoser_endpoints().order_by("name"))
    if not endpoints:
        return [
            rule,
            _llm_option(
                usable=False,
                why="not usable: no OpenAI-compatible endpoint is configured (add one on the "
                "Endpoints page with route 'OpenAI-compatible server', or choose any endpoint "
                "for the diagnoser role there); the demo has none",
            ),
        ]
    problems = {e.name: diagnoser_endpoint_problem(endpoint=e) for e in endpoints}
    ready = [name for name, problem in problems.items() if not problem]
    if not ready:
        return [rule, _llm_option(usable=False, why="not usable: " + "; ".join(problems.values()))]
    untested = [e.name for e in endpoints if e.name in ready and e.last_check_ok is None]
    why = f"usable with {', '.join(ready)}" + (
        f" ({', '.join(untested)} never connection-tested)" if untested else ""
    )
    if len(ready) < len(endpoints):
        why += "; not with " + "; ".join(p for p in problems.values() if p)
    return [rule, _llm_option(usable=True, why=why)]


def _llm_option(*, usable: bool, why: str) -> DiagnoserOption:
    return DiagnoserOption(Evolution.LLM, "LLM over an endpoint", usable, why)


def _diagnoser_for(evolution: Evolution):
    from evaluation.diagnosis import LLMDiagnoser, RuleBasedDiagnoser

    if evolution.diagnoser == Evolution.LLM:
        from studio.endpoints.services import endpoint_role_model

        return LLMDiagnoser(
            model=endpoint_role_model(role="diagnoser", endpoint=evolution.diagnoser_endpoint)
        )
    return RuleBasedDiagnoser()


def _replay(proposals, *, run: EvalRun, files: dict[str, str], cases: dict[str, dict], log) -> None:
    """Re-score each valid proposal's targeted cases under its edits, with the run's endpoint and
    catalogue."""
    from evaluation.diagnosis import prediction_text, replay_proposal
    from evaluation.scoring import CaseScorer
    from studio.endpoints.services import policy_for_endpoint
    from studio.evolution.rows import catalogue_for
    from studio.mcpservers.selectors import mcp_registry

    catalogue = catalogue_for(run.dataset)

    def scorer_for(bundle):
        return CaseScorer.for_bundle(
            bundle=bundle,
            policy=policy_for_endpoint(endpoint=run.endpoint),
            catalogue=catalogue,
            mcp_registry=mcp_registry(),
        )

    for number, proposal in enumerate(proposals, 1):
        if proposal.valid:
            replay_proposal(proposal, files=files, cases=cases, scorer_for=scorer_for)
            log(f"proposal {number} ({proposal.title}): {prediction_text(proposal.replay)}")


def diagnosis_execute(*, diagnosis_id: int, log) -> dict[str, Any]:
    """The diagnosis job's body: cluster dev-split failures, propose and validate edits, store
    them."""
    from evaluation.diagnosis import LLMDiagnoser, diagnose, failures_from_results

    diagnosis = Diagnosis.objects.select_related("stage__evolution", "run__version").get(
        pk=diagnosis_id
    )
    Diagnosis.objects.filter(pk=diagnosis.pk).update(status=EvalRun.RUNNING)
    try:
        results = list(
            CaseResult.objects.filter(run=diagnosis.run, split=DatasetCase.DEV).values(
                "case_id",
                "category",
                "accuracy",
                "effectiveness",
                "verdict",
                "reply",
                "route",
                "trajectory",
            )
        )
        rows = [{**r, "reasons": r["verdict"].get("reasons", [])} for r in results]
        cases = {
            c.case_id: c.data
            for c in DatasetCase.objects.filter(
                dataset=diagnosis.run.dataset, case_id__in=[r["case_id"] for r in rows]
            )
        }
        failures = failures_from_results(results=rows, cases=cases)
        log(
            f"{len(failures)} of {len(rows)} dev-split case(s) "
            "failed; held-out cases are left out of diagnosis"
        )
        files = version_files(version=diagnosis.run.version)
        diagnoser = _diagnoser_for(diagnosis.stage.evolution)
        found = diagnose(failures=failures, total=len(rows), files=files, diagnoser=diagnoser)
        if isinstance(diagnoser, LLMDiagnoser):
            log(f"model calls: {diagnoser.model.usage()}")
        if found.finding:
            log(found.finding)
        _replay(found.proposals, run=diagnosis.run, files=files, cases=cases, log=log)
    except Exception as error:
        Diagnosis.objects.filter(pk=diagnosis.pk).update(
            status=EvalRun.FAILED, error=f"{type(error).__name__}: {error}"
        )
        raise
    with transaction.atomic():
        Proposal.objects.bulk_create(
            [
                Proposal(
                    diagnosis=diagnosis,
                    index=i,
                    title=p.title,
                    rationale=p.rationale,
                    reason=p.reason,
                    diagnoser=p.diagnoser,
                    target_case_ids=p.target_case_ids,
                    edits=[e.to_dict() for e in p.edits],
                    valid=p.valid,
                    problems=p.problems,
                    diff=p.diff,
                    summary=p.summary,
                    evidence=p.evidence,
                    replay=p.replay,
                )
                for i, p in enumerate(found.proposals)
            ]
        )
        Diagnosis.objects.filter(pk=diagnosis.pk).update(
            status=EvalRun.SUCCEEDED,
            total=found.total,
            failed=found.failed,
            finding=found.finding,
            clusters=[c.to_dict() for c in found.clusters],
        )
    log(
        f"{len(found.clusters)} cluster(s), {len(found.proposals)} proposal(s) "
        f"({sum(p.valid for p in found.proposals)} valid)"
    )
    return {
        "clusters": len(found.clusters),
        "proposals": len(found.proposals),
        "failed": found.failed,
    }
