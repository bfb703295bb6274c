"""Release gates before promotion to production, and the stopping advice of docs/architecture.md §5.

One definition of each gate, used by the evolution loop's promotions of a Harness version and by
releases (``studio.releases``: a checkpoint, its draft head and a Harness version):

- *business regression*: no category's AVG drops more than the evolution's tolerance against the
  parent, from the newest evolution stage that evaluated the version as a candidate;
- *latency*: the P95 wall time of a finished studio replay run (``TrainingRun`` kind ``replay``, its
  record read from ``RUN/replay`` by ``serving.record``) that served the checkpoint under the Harness
  version. The SLA is per request (every request answered within 15 s; docs/architecture.md §10), so the level
  that counts is the *worst* concurrency level's P95: a deployment that meets the bound at C=1 but
  not at C=8 does not meet it at the load it was replayed for. A replay whose requests mostly fell
  back to the Harness's fallback reply at any level fails: it timed the fallback, not answers;
- *general capability*: instruction following (IFEval checkers, prompt-level strict) of a finished
  studio checkpoint evaluation run (kind ``eval`` with the ``ifeval`` set) of the checkpoint,
  compared with its base model on the same prompts (the run scores both): the checkpoint minus the
  base, paired prompt by prompt, with the paired-bootstrap 95% interval. It fails when the whole
  interval lies below zero (the training cost instruction following, beyond chance), not against
  an absolute floor that a small model never meets. It passes only when the interval rules out a
  loss of more than ``CAPABILITY_TOLERANCE_POINTS``; an interval that still allows one (a few
  prompts: IFE-P 0% against its base's 10% on 10 prompts is one prompt) is "not enough data",
  so a drop that large never passes. A base model evaluated on its own passes with its score
  shown: nothing was trained away;
- *compatibility*: the pair being promoted (the production model, or a release's checkpoint, on the
  Harness version) has a finished cell of the compatibility matrix (``studio.compatibility``) and is
  not worse than the production pair's cell beyond the paired bootstrap interval.

A release names its checkpoint. A Harness promotion names none: its latency and capability gates
read the checkpoint of the Harness's newest approved release (what production serves), and where
no release was approved yet, the newest such run of any model; the gate's detail says which run,
which model and why. Each gate names the run that fed it (``run_id``). Promotion needs every gate
to pass: a gate that failed or has no data blocks it unless a reviewer overrides it with a written
reason (:func:`gates_check_promotion`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LATENCY_BOUND_S = 15.0
CAPABILITY_RESAMPLES = 2000  # paired bootstrap of the capability gate (a gate is read on every release page)
#: The largest loss of IFE-P strict (percentage points, checkpoint minus its base) the capability gate lets
#: pass; the paired interval must rule out any larger one.
CAPABILITY_TOLERANCE_POINTS = 5.0
NOT_ENOUGH_DATA = "not enough data"
RECENT_RUNS = 200  # finished runs looked through, newest first, for the one that fed a gate


@dataclass
class Gate:
    name: str
    status: str  # pass | fail | no data | not enough data
    detail: str
    run_id: int | None = None  # the studio run (TrainingRun) whose result fed the gate
    stage_id: int | None = None  # the evolution stage whose comparison fed the business gate
    judged: bool = False  # its figures were scored by the evaluation judge (the judge-calibration gate reads it)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Gate:
        return cls(name=data["name"], status=data["status"], detail=data["detail"], run_id=data.get("run_id"),
                   stage_id=data.get("stage_id"), judged=data.get("judged", False))


def business_gate(*, comparison: dict[str, Any], tolerance: float) -> Gate:
    if not comparison:
        return Gate("business regression", "no data", "the candidate has not been evaluated yet")
    drops = {cat: block["avg"]["delta"] for cat, block in comparison["per_category"].items()
             if block["avg"]["delta"] < -100 * tolerance}
    if drops:
        shown = ", ".join(f"{k} {v:+.2f}" for k, v in sorted(drops.items()))
        return Gate("business regression", "fail",
                    f"AVG drops beyond the {100 * tolerance:.1f}-point tolerance: {shown}", judged=True)
    return Gate("business regression", "pass",
                f"no category's AVG drops more than {100 * tolerance:.1f} points", judged=True)


def version_business_gate(*, version) -> Gate:
    """The business gate of a version: the newest evolution stage that evaluated it as a candidate
    against its parent; a version no stage evaluated has no data."""
    from studio.evolution.models import Stage

    stage = (Stage.objects.select_related("evolution").filter(candidate_version=version)
             .exclude(comparison={}).order_by("-pk").first())
    if stage is None:
        from studio.harnesses.models import Label

        production = Label.objects.filter(harness_id=version.harness_id, name=Label.PRODUCTION).first()
        if production is not None and production.version_id == version.pk:
            return Gate("business regression", "pass", f"v{version.number} is the production version: its replies "
                        "are what production gives now, so it cannot regress against it")
        if version.parent_id is None and production is None:
            return Gate("business regression", "pass", f"v{version.number} has no parent and no version is in "
                        "production yet: there is nothing it could regress against")
        if version.parent_id is None:  # a first version is judged against what production runs
            return Gate("business regression", "no data",
                        f"v{version.number} has no parent, so it is judged against the production version "
                        f"(v{production.version.number}), and no evolution stage has compared them; start an "
                        f"evolution from v{production.version.number} and compare v{version.number} with it")
        return Gate("business regression", "no data",
                    f"v{version.number} has not been evaluated against its parent in an evolution stage"
                    + (f"; note that production is v{production.version.number}, not v{version.number}"
                       if production is not None else ""))
    gate = business_gate(comparison=stage.comparison, tolerance=stage.evolution.tolerance)
    gate.detail += f" (evolution #{stage.evolution_id} stage {stage.number})"
    gate.stage_id = stage.pk
    return gate


# -- the runs that feed the latency and capability gates ---------------------------------------------------


def _resolved(path: str | Path | None) -> Path | None:
    if not path or not str(path).startswith("/"):
        return None
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError):
        return None


def replay_checkpoint(run) -> dict[str, Any]:
    """What a replay run served, as its record says ({path, fingerprint}), else as its route names it."""
    route = (run.summary or {}).get("route")
    recorded = route.get("checkpoint") if isinstance(route, dict) else None
    if isinstance(recorded, dict) and recorded.get("path"):
        return {"path": recorded["path"], "fingerprint": recorded.get("fingerprint")}
    engine, _, rest = run.model.partition(":")
    if rest and engine in ("local", "transformers"):
        return {"path": rest, "fingerprint": None}
    from serving.profiles import ProfileError, resolve_route

    try:
        return {"path": resolve_route(run.model).checkpoint, "fingerprint": None}
    except ProfileError:
        return {"path": None, "fingerprint": None}


def _finished(kind: str):
    from django.db.models import F

    from studio.jobs.models import Job
    from studio.training.models import TrainingRun

    return (TrainingRun.objects.select_related("job", "harness_version__harness")
            .filter(kind=kind, job__status=Job.SUCCEEDED, summary__isnull=False)
            .order_by(F("job__finished_at").desc(nulls_last=True), "-pk")[:RECENT_RUNS])


def _under_version(run, version) -> bool:
    if run.harness_version_id is not None:
        return run.harness_version_id == version.pk
    replay = (run.summary or {}).get("replay") or {}
    return bool(replay.get("harness_digest")) and replay["harness_digest"] == version.digest


def _serves(recorded: dict[str, Any], checkpoint: Path, fingerprint: str | None) -> bool:
    if _resolved(recorded.get("path")) != checkpoint:
        return False
    # the same folder measured before it was trained again is another model
    return not (fingerprint and recorded.get("fingerprint") and recorded["fingerprint"] != fingerprint)


def worst_level(replay: dict[str, Any]) -> tuple[str, float] | None:
    """(concurrency, P95 s) of the replay's slowest level: the level the per-request SLA is judged on."""
    levels = [(level, float(m["wall_p95_s"])) for level, m in (replay.get("levels") or {}).items()
              if isinstance(m, dict) and isinstance(m.get("wall_p95_s"), int | float)]
    return max(levels, key=lambda item: item[1]) if levels else None


def latency_gate(*, version, checkpoint: Path | None = None, fingerprint: str | None = None,
                 why: str = "") -> Gate:
    """The latency gate from the newest finished replay run under ``version`` that served
    ``checkpoint`` (any model when None; ``why`` says why that is what counts)."""
    served = f"served {checkpoint}" if checkpoint else "of any model"
    for run in _finished("replay"):
        if not _under_version(run, version):
            continue
        recorded = replay_checkpoint(run)
        if checkpoint is not None and not _serves(recorded, checkpoint, fingerprint):
            continue
        worst = worst_level(run.summary.get("replay") or {})
        model = recorded.get("path") or run.model
        if worst is None:
            return Gate("latency", "no data", f"replay run #{run.pk} ({model}) has no successful request to time; "
                        "its levels have no wall P95", run_id=run.pk)
        level, p95 = worst
        from serving.metrics import fallback_warning

        fell_back = fallback_warning((run.summary.get("replay") or {}).get("levels") or {})
        if fell_back:
            return Gate("latency", "fail", f"{fell_back} (replay run #{run.pk} of {model} under "
                        f"{version.harness.name} v{version.number}{why}); the gate needs answers to time",
                        run_id=run.pk)
        ok = p95 <= LATENCY_BOUND_S
        return Gate("latency", "pass" if ok else "fail",
                    f"worst level C={level}: wall P95 {p95:.2f} s (bound {LATENCY_BOUND_S:g} s per request) in "
                    f"replay run #{run.pk} of {model} under {version.harness.name} v{version.number}{why}",
                    run_id=run.pk)
    return Gate("latency", "no data", f"no finished replay run {served} under {version.harness.name} "
                f"v{version.number}{why}; start a deployment replay (/training/new/replay/) to check the "
                f"{LATENCY_BOUND_S:g} s bound")


def capability_comparison(ifeval: dict[str, Any]) -> dict[str, Any] | None:
    """The checkpoint minus its base on the same prompts (percent points, paired bootstrap 95% interval),
    from an evaluation summary's ``ifeval`` block; None where the base did not answer the same prompts."""
    base = ifeval.get("base")
    mine, theirs = ifeval.get("per_prompt"), (base or {}).get("per_prompt")
    if not isinstance(mine, list) or not isinstance(theirs, list) or not mine or len(mine) != len(theirs):
        return None
    from evaluation.stats import paired_bootstrap

    result = paired_bootstrap(baseline=[100 * float(v) for v in theirs], candidate=[100 * float(v) for v in mine],
                              resamples=CAPABILITY_RESAMPLES)
    return {"delta": result.delta, "low": result.low, "high": result.high, "n": result.n,
            "base_model": base.get("model", ""), "base_strict": base.get("prompt_strict")}


def capability_verdict(paired: dict[str, Any]) -> tuple[str, str]:
    """The capability gate's status and its reason from ``capability_comparison``: fail when the whole
    interval lies below zero; pass when it rules out a loss of more than ``CAPABILITY_TOLERANCE_POINTS``
    (the measured drop included); otherwise the prompts are too few to decide."""
    if paired["high"] < 0:
        return "fail", "fewer instructions followed than its base, beyond chance"
    worst = min(paired["low"], paired["delta"])
    if worst >= -CAPABILITY_TOLERANCE_POINTS:
        return "pass", f"a loss of more than {CAPABILITY_TOLERANCE_POINTS:g} points is ruled out"
    return NOT_ENOUGH_DATA, (f"{NOT_ENOUGH_DATA}: on {paired['n']} prompts the interval still allows a loss of "
                             f"{-worst:.1f} points, more than the {CAPABILITY_TOLERANCE_POINTS:g} allowed; evaluate "
                             "the checkpoint on more instruction-following prompts")


def ifeval_gate(*, checkpoint: Path | None = None, why: str = "") -> Gate:
    """The capability gate from the newest finished evaluation run with the instruction-following set of
    ``checkpoint`` (any model when None): the checkpoint against its base on the same prompts."""
    of = f"of {checkpoint}" if checkpoint else "of any model"
    for run in _finished("eval"):
        scores = (run.summary or {}).get("evaluation") or {}
        ifeval = scores.get("ifeval")
        if not isinstance(ifeval, dict) or not isinstance(ifeval.get("prompt_strict"), int | float):
            continue
        model = scores.get("model") or run.model
        if checkpoint is not None and _resolved(model) != checkpoint and _resolved(run.model) != checkpoint:
            continue
        label = (ifeval.get("set") or {}).get("label") or "instruction-following prompts"
        measured = f"IFE-P strict {float(ifeval['prompt_strict']):.1f}% on {ifeval.get('n')} prompts ({label})"
        where = f"in evaluation run #{run.pk} of {model}{why}"
        if not ifeval.get("base"):
            from training.runs import base_model_of

            if _resolved(base_model_of(model)) not in (None, _resolved(model)):
                return Gate("general capability", "no data",
                            f"{measured} {where}, but its base model {base_model_of(model)} did not answer the same "
                            "prompts; evaluate the checkpoint again (the evaluation scores its base too)",
                            run_id=run.pk)
            return Gate("general capability", "pass",
                        f"{measured} {where}: a base model, with no training that could have cost it instruction "
                        "following", run_id=run.pk)
        paired = capability_comparison(ifeval)
        if paired is None:
            return Gate("general capability", "no data", f"{measured} {where}, but its base's answers are not on "
                        "the same prompts; evaluate the checkpoint again", run_id=run.pk)
        status, verdict = capability_verdict(paired)
        return Gate("general capability", status,
                    f"{measured} vs its base {paired['base_strict']:.1f}% on the same prompts: "
                    f"{paired['delta']:+.1f} points, paired 95% interval [{paired['low']:+.1f}, {paired['high']:+.1f}] "
                    f"({verdict}) {where}", run_id=run.pk)
    return Gate("general capability", "no data", f"no finished instruction-following evaluation {of}{why}; "
                "evaluate the checkpoint with the instruction-following set (/training/new/eval/)")


def checkpoint_release_gates(*, version, checkpoint: str | Path, fingerprint: str | None = None) -> list[Gate]:
    """The gates of a release: ``checkpoint`` (a final/ folder) served under ``version``."""
    path = Path(checkpoint).resolve()
    return with_judge_gate([version_business_gate(version=version), latency_gate(version=version, checkpoint=path,
                                                                                 fingerprint=fingerprint),
                            ifeval_gate(checkpoint=path), compatibility_gate(version=version, checkpoint=path)])


def production_checkpoint(*, harness) -> tuple[Path | None, str]:
    """The checkpoint a Harness promotion is judged with, and a clause saying why."""
    from studio.releases.models import Release

    release = (Release.objects.filter(harness_version__harness=harness, status=Release.APPROVED)
               .order_by("-decided_at", "-pk").first())
    if release is None:
        return None, f" (no release of {harness.name} is approved yet, so any model's newest run counts)"
    return Path(release.checkpoint_path).resolve(), f" (the checkpoint of release #{release.pk}, the newest approved)"


def _model_gates(*, version) -> list[Gate]:
    if version is None:  # a stage whose candidate is not committed yet
        return [Gate("latency", "no data", "the stage has no candidate version yet"),
                Gate("general capability", "no data", "the stage has no candidate version yet"),
                Gate("compatibility", "no data", "the stage has no candidate version yet")]
    checkpoint, why = production_checkpoint(harness=version.harness)
    return [latency_gate(version=version, checkpoint=checkpoint, why=why), ifeval_gate(checkpoint=checkpoint, why=why),
            compatibility_gate(version=version)]


def release_gates(*, comparison: dict[str, Any], tolerance: float, version) -> list[Gate]:
    """The gates of an evolution stage's candidate ``version`` (its business gate is the stage's comparison)."""
    return with_judge_gate([business_gate(comparison=comparison, tolerance=tolerance), *_model_gates(version=version)])


def version_release_gates(*, version) -> list[Gate]:
    """The gates of a version promoted outside a stage decision (the Harness page, the API)."""
    return with_judge_gate([version_business_gate(version=version), *_model_gates(version=version)])


def gates_blocking(gates: list[Gate]) -> list[Gate]:
    """The gates that stop a promotion to production: failed, or without data."""
    return [g for g in gates if g.status != "pass"]


def gates_check_promotion(*, gates: list[Gate], override_reason: str,
                          action: str = "Promotion to production", verb: str = "promote") -> list[Gate]:
    """The blocking gates a promotion (or a release's approval: ``action``, ``verb``) goes through with;
    ValueError naming them when there is no override reason."""
    blocking = gates_blocking(gates)
    if blocking and not override_reason.strip():
        shown = "; ".join(f"{g.name}: {g.status} ({g.detail})" for g in blocking)
        raise ValueError(f"release gates did not pass: {shown}. {action} needs every gate to pass; "
                         f"to {verb} anyway, a reviewer must write why in the override reason")
    return blocking


def stopping_advice(*, stages: list, sparse_share: float = 0.1, sparse_cluster: int = 2) -> str:
    """Advice to stop when the last evaluated stage regressed and the remaining failures are long-tail.

    ``stages`` are Stage rows in order. Long-tail: failures are under ``sparse_share`` of the cases,
    or no failure cluster of the last diagnosis holds more than ``sparse_cluster`` cases.
    """
    evaluated = [s for s in stages if s.comparison]
    if not evaluated:
        return ""
    last = evaluated[-1]
    overall = last.comparison["overall"]
    regressed = overall["avg"]["delta"] < 0 or any(
        b["avg"]["delta"] < 0 for b in last.comparison["per_category"].values()) and overall["avg"]["delta"] <= 0
    errors, n = overall["errors_candidate"], overall["n"]
    diagnosis = last.diagnoses.first()
    biggest = max((c["size"] for c in diagnosis.clusters), default=0) if diagnosis else 0
    long_tail = errors <= sparse_share * n or biggest <= sparse_cluster
    if regressed and long_tail:
        return (f"Stop here: stage {last.number} did not improve AVG ({overall['avg']['delta']:+.2f}) and the "
                f"{errors} remaining failure(s) of {n} are sparse long-tail cases; more local rules risk "
                "cross-category regressions. Keep the best version so far.")
    return ""


def version_gate_overrides(*, version) -> list:
    """The audit events of promotions of ``version`` that went through with a gate overridden."""
    from studio.audit.models import AuditEvent

    return list(AuditEvent.objects.select_related("actor")
                .filter(action="evolution.gates.override", harness_id=version.harness_id,
                        data__version=version.number).order_by("-created_at"))


def compatibility_gate(*, version, checkpoint: str | Path | None = None) -> Gate:
    """The compatibility gate: the cell of the model serving production (or of ``checkpoint``, a release's
    final/ folder, through its endpoint) on ``version`` against the production pair's cell
    (``studio.compatibility``: every figure is ``evaluation.compatibility``'s)."""
    from studio.compatibility.selectors import cell_avg, pair_against_production
    from studio.endpoints.models import ModelEndpoint

    endpoint = None
    if checkpoint is not None:
        endpoint = ModelEndpoint.objects.filter(route=ModelEndpoint.LOCAL, model=str(checkpoint)).first()
        if endpoint is None:
            return Gate("compatibility", "no data", f"no endpoint serves {checkpoint}, so it has no cell in the "
                        "compatibility matrix; make one from the registry (Make endpoint) and ask for its cell")
    found = pair_against_production(version=version, endpoint=endpoint)
    if found["problem"]:
        return Gate("compatibility", "no data", found["problem"])
    cell, reference, change = found["cell"], found["reference"], found["change"]
    if reference is None:
        return Gate("compatibility", "pass", f"{cell.endpoint.name} on v{version.number}: AVG {cell_avg(cell):.1f} in "
                    f"compatibility run #{cell.run_id}; there is no production version to compare with yet",
                    judged=True)
    if change is None:
        return Gate("compatibility", "pass", f"{cell.endpoint.name} on v{version.number} is the production pair "
                    f"(compatibility run #{cell.run_id})", judged=True)
    avg = change["avg"]
    shown = (f"{cell.endpoint.name} on v{version.number}: AVG {avg['candidate']:.1f} vs {avg['parent']:.1f} for the "
             f"production pair (v{reference.version.number}), delta {avg['delta']:+.1f} "
             f"[{avg['low']:+.1f}, {avg['high']:+.1f}] on {change['n']} paired cases of compatibility set "
             f"{cell.set_version} (runs #{cell.run_id} and #{reference.run_id})")
    if change["verdict"] == "worse":
        return Gate("compatibility", "fail", f"worse than the production pair beyond the interval: {shown}",
                    judged=True)
    return Gate("compatibility", "pass", f"{change['verdict']}: {shown}", judged=True)


def with_judge_gate(gates: list[Gate]) -> list[Gate]:
    """``gates`` and the judge-calibration gate: where a gate read judged figures, the studio's evaluation
    judge must be calibrated against human labels at the configured agreement
    (``studio.annotation.selectors.judge_standing``); uncalibrated is "no data", below agreement "fail",
    so a promotion on such figures needs a reviewer's override as any other."""
    from studio.annotation.selectors import judge_standing
    from studio.evolution.runs import EVAL_JUDGE

    judged = [g.name for g in gates if g.judged]
    if not judged:
        return [*gates, Gate("judge calibration", "pass", "no figure of these gates was scored by a judge")]
    standing = judge_standing(EVAL_JUDGE)
    status = "pass" if standing.ok else "no data" if standing.calibration is None else "fail"
    return [*gates, Gate("judge calibration", status, f"{' and '.join(judged)}: {standing.text}")]
