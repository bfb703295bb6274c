"""Release gates before promotion to production, and the stopping advice of docs/architecture.md §5.

One definition of each gate, used by the evolution loop's promotions of a Harness version and by
releases (``studio.releases``: a checkpoint, its draft head and a Harness version):

- *business regression*: no category's AVG drops more than the evolution's tolerance against the
  parent, from the newest evolution stage that evaluated the version as a candidate;
- *latency*: the P95 wall time of a finished studio replay run (``TrainingRun`` kind ``replay``, its
  record read from ``RUN/replay`` by ``serving.record``) that served the checkpoint under the
  Harness version. The SLA is per request (every request answered within 15 s; docs/architecture.md
  §10), so the level that counts is the *worst* concurrency level's P95: a deployment that meets the
  bound at C=1 but not at C=8 does not meet it at the load it was replayed for. A replay whose
  requests mostly fell back to the Harness's fallback reply at any level fails: it timed the
  fallback, not answers;
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
reason (``evaluation.gates.gates_check_promotion``).

The verdicts are ``evaluation.gates``'s pure rules over typed evidence records, read by one reader
per source; this module finds the evidence through each app's selectors (training's runs,
compatibility's cells, releases, the evolution's stages, the audit log) and words each gate with the
run that fed it. A record of a shape its reader does not know makes the gate "unreadable" (it
blocks), naming the field.
"""

from __future__ import annotations

from pathlib import Path

from evaluation.gates import (
    LATENCY_BOUND_S,
    EvidenceError,
    Gate,
    business_verdict,
    capability_comparison,
    capability_verdict,
    compatibility_verdict,
    latency_verdict,
    read_cell_change,
    read_comparison,
)


def _unreadable(
    name: str, error: EvidenceError, *, run_id: int | None = None, stage_id: int | None = None
) -> Gate:
    return Gate(
        name,
        "unreadable",
        f"{error}; the gate cannot read its evidence, so it blocks until the run is "
        "evaluated again by this studio",
        run_id=run_id,
        stage_id=stage_id,
    )


def business_gate(
    *, comparison: dict, tolerance: float, source: str = "the stage's comparison"
) -> Gate:
    try:
        evidence = read_comparison(comparison, source=source)
    except EvidenceError as error:
        return _unreadable("business regression", error)
    if evidence is None:
        return Gate("business regression", "no data", "the candidate has not been evaluated yet")
    status, detail = business_verdict(evidence, tolerance=tolerance)
    return Gate("business regression", status, detail, judged=True)


def version_business_gate(*, version) -> Gate:
    """The business gate of a version: the newest evolution stage that evaluated it as a candidate
    against its parent; a version no stage evaluated has no data."""
    from studio.evolution.selectors import stage_newest_for_candidate
    from studio.harnesses.selectors import label_production

    stage = stage_newest_for_candidate(version=version)
    if stage is None:
        production = label_production(harness_id=version.harness_id)
        if production is not None and production.version_id == version.pk:
            return Gate(
                "business regression",
                "pass",
                f"v{version.number} is the production version: its replies "
                "are what production gives now, so it cannot regress against it",
            )
        if version.parent_id is None and production is None:
            return Gate(
                "business regression",
                "pass",
                f"v{version.number} has no parent and no version is in "
                "production yet: there is nothing it could regress against",
            )
        if version.parent_id is None:  # a first version is judged against what production runs
            return Gate(
                "business regression",
                "no data",
                f"v{version.number} has no parent, so it is judged against the production version "
                f"(v{production.version.number}), and no "
                "evolution stage has compared them; start an "
                f"evolution from v{production.version.number} "
                f"and compare v{version.number} with it",
            )
        return Gate(
            "business regression",
            "no data",
            f"v{version.number} has not been evaluated against its parent in an evolution stage"
            + (
                f"; note that production is v{production.version.number}, not v{version.number}"
                if production is not None
                else ""
            ),
        )
    gate = business_gate(
        comparison=stage.comparison,
        tolerance=stage.evolution.tolerance,
        source=f"evolution #{stage.evolution_id} stage {stage.number}'s comparison",
    )
    gate.detail += f" (evolution #{stage.evolution_id} stage {stage.number})"
    gate.stage_id = stage.pk
    return gate


# -- the runs that feed the latency and capability gates
# ---------------------------------------------------


def _serves(recorded: dict, checkpoint: Path, fingerprint: str | None) -> bool:
    from studio.training.selectors.evidence import resolved

    if resolved(path=recorded.get("path")) != checkpoint:
        return False
    # the same folder measured before it was trained again is another model
    return not (
        fingerprint and recorded.get("fingerprint") and recorded["fingerprint"] != fingerprint
    )


def latency_gate(
    *, version, checkpoint: Path | None = None, fingerprint: str | None = None, why: str = ""
) -> Gate:
    """The latency gate from the newest finished replay run under ``version`` that served
    ``checkpoint`` (any model when None; ``why`` says why that is what counts)."""
    from studio.training.selectors.evidence import (
        finished_runs,
        replay_checkpoint,
        replay_timing,
        run_under_version,
    )

    served = f"served {checkpoint}" if checkpoint else "of any model"
    for run in finished_runs(kind="replay"):
        if not run_under_version(run=run, version=version):
            continue
        recorded = replay_checkpoint(run=run)
        if checkpoint is not None and not _serves(recorded, checkpoint, fingerprint):
            continue
        model = recorded.get("path") or run.model
        try:
            timing = replay_timing(run=run)
        except EvidenceError as error:
            return _unreadable("latency", error, run_id=run.pk)
        status, verdict = latency_verdict(timing, bound_s=LATENCY_BOUND_S)
        if status == "no data":
            return Gate(
                "latency", status, f"replay run #{run.pk} ({model}) has {verdict}", run_id=run.pk
            )
        return Gate(
            "latency",
            status,
            f"{verdict} in replay run #{run.pk} of {model} under "
            f"{version.harness.name} v{version.number}{why}",
            run_id=run.pk,
        )
    return Gate(
        "latency",
        "no data",
        f"no finished replay run {served} under {version.harness.name} "
        f"v{version.number}{why}; start a deployment replay (/training/new/replay/) to check the "
        f"{LATENCY_BOUND_S:g} s bound",
    )


def ifeval_gate(*, checkpoint: Path | None = None, why: str = "") -> Gate:
    """The capability gate from the newest finished evaluation run with the instruction-following
    set of ``checkpoint`` (any model when None): the checkpoint against its base on the same
    prompts."""
    from studio.training.selectors.evidence import (
        evaluated_model,
        finished_runs,
        ifeval_scores,
        resolved,
    )

    of = f"of {checkpoint}" if checkpoint else "of any model"
    for run in finished_runs(kind="eval"):
        try:
            model, scores = ifeval_scores(run=run)
        except EvidenceError as error:
            if checkpoint is None or checkpoint in (
                resolved(path=evaluated_model(run=run)),
                resolved(path=run.model),
            ):
                return _unreadable("general capability", error, run_id=run.pk)
            continue
        if scores is None:
            continue
        if (
            checkpoint is not None
            and resolved(path=model) != checkpoint
            and resolved(path=run.model) != checkpoint
        ):
            continue
        measured = (
            f"IFE-P strict {scores.checkpoint.prompt_strict:.1f}% on {scores.n} prompts "
            f"({scores.set_label})"
        )
        where = f"in evaluation run #{run.pk} of {model}{why}"
        if scores.base is None:
            from training.runs import base_model_of

            if resolved(path=base_model_of(model)) not in (None, resolved(path=model)):
                return Gate(
                    "general capability",
                    "no data",
                    f"{measured} {where}, but its base model "
                    f"{base_model_of(model)} did not answer the same "
                    "prompts; evaluate the checkpoint again (the evaluation scores its base too)",
                    run_id=run.pk,
                )
            return Gate(
                "general capability",
                "pass",
                f"{measured} {where}: a base model, with no "
                "training that could have cost it instruction "
                "following",
                run_id=run.pk,
            )
        paired = capability_comparison(scores)
        if paired is None:
            return Gate(
                "general capability",
                "no data",
                f"{measured} {where}, but its base's answers are not on "
                "the same prompts; evaluate the checkpoint again",
                run_id=run.pk,
            )
        status, verdict = capability_verdict(paired)
        return Gate(
            "general capability",
            status,
            f"{measured} vs its base {paired.base_strict:.1f}% on the same prompts: "
            f"{paired.delta:+.1f} points, paired 95% interval "
            f"[{paired.low:+.1f}, {paired.high:+.1f}] "
            f"({verdict}) {where}",
            run_id=run.pk,
        )
    return Gate(
        "general capability",
        "no data",
        f"no finished instruction-following evaluation {of}{why}; "
        "evaluate the checkpoint with the instruction-following set (/training/new/eval/)",
    )


def checkpoint_release_gates(
    *, version, checkpoint: str | Path, fingerprint: str | None = None
) -> list[Gate]:
    """The gates of a release: ``checkpoint`` (a final/ folder) served under ``version``."""
    path = Path(checkpoint).resolve()
    return with_judge_gate(
        [
            version_business_gate(version=version),
            latency_gate(version=version, checkpoint=path, fingerprint=fingerprint),
            ifeval_gate(checkpoint=path),
            compatibility_gate(version=version, checkpoint=path),
        ]
    )


def production_checkpoint(*, harness) -> tuple[Path | None, str]:
    """The checkpoint a Harness promotion is judged with, and a clause saying why."""
    from studio.releases.selectors import release_newest_approved

    release = release_newest_approved(harness=harness)
    if release is None:
        return (
            None,
            f" (no release of {harness.name} is approved yet, so any model's newest run counts)",
        )
    return Path(
        release.checkpoint_path
    ).resolve(), f" (the checkpoint of release #{release.pk}, the newest approved)"


def _model_gates(*, version) -> list[Gate]:
    if version is None:  # a stage whose candidate is not committed yet
        return [
            Gate("latency", "no data", "the stage has no candidate version yet"),
            Gate("general capability", "no data", "the stage has no candidate version yet"),
            Gate("compatibility", "no data", "the stage has no candidate version yet"),
        ]
    checkpoint, why = production_checkpoint(harness=version.harness)
    return [
        latency_gate(version=version, checkpoint=checkpoint, why=why),
        ifeval_gate(checkpoint=checkpoint, why=why),
        compatibility_gate(version=version),
    ]


def release_gates(*, comparison: dict, tolerance: float, version) -> list[Gate]:
    """The gates of an evolution stage's candidate ``version`` (its business gate is the stage's
    comparison)."""
    return with_judge_gate(
        [business_gate(comparison=comparison, tolerance=tolerance), *_model_gates(version=version)]
    )


def stage_gates(*, stage) -> list[Gate]:
    """The gates of an evolution stage's candidate once the stage has its comparison, else none."""
    if not stage.comparison:
        return []
    return release_gates(
        comparison=stage.comparison,
        tolerance=stage.evolution.tolerance,
        version=stage.candidate_version,
    )


def version_release_gates(*, version) -> list[Gate]:
    """The gates of a version promoted outside a stage decision (the Harness page, the API)."""
    return with_judge_gate([version_business_gate(version=version), *_model_gates(version=version)])


def stopping_advice(*, stages: list, sparse_share: float = 0.1, sparse_cluster: int = 2) -> str:
    """Advice to stop when the last evaluated stage regressed and the remaining failures are
    long-tail.

    ``stages`` are Stage rows in order. Long-tail: failures are under ``sparse_share`` of the cases,
    or no failure cluster of the last diagnosis holds more than ``sparse_cluster`` cases.
    """
    evaluated = [s for s in stages if s.comparison]
    if not evaluated:
        return ""
    last = evaluated[-1]
    overall = last.comparison["overall"]
    regressed = (
        overall["avg"]["delta"] < 0
        or any(b["avg"]["delta"] < 0 for b in last.comparison["per_category"].values())
        and overall["avg"]["delta"] <= 0
    )
    errors, n = overall["errors_candidate"], overall["n"]
    diagnosis = last.diagnoses.first()
    biggest = max((c["size"] for c in diagnosis.clusters), default=0) if diagnosis else 0
    long_tail = errors <= sparse_share * n or biggest <= sparse_cluster
    if regressed and long_tail:
        return (
            f"Stop here: stage {last.number} did not improve "
            f"AVG ({overall['avg']['delta']:+.2f}) and the "
            f"{errors} remaining failure(s) of {n} are "
            "sparse long-tail cases; more local rules risk "
            "cross-category regressions. Keep the best version so far."
        )
    return ""


def compatibility_gate(*, version, checkpoint: str | Path | None = None) -> Gate:
    """The compatibility gate: the cell of the model serving production (or of ``checkpoint``, a
    release's final/ folder, through its endpoint) on ``version`` against the production pair's cell
    (``studio.compatibility``: every figure is ``evaluation.compatibility``'s)."""
    from studio.compatibility.selectors import cell_avg, pair_against_production
    from studio.endpoints.selectors import endpoint_serving

    endpoint = None
    if checkpoint is not None:
        endpoint = endpoint_serving(model_dir=str(checkpoint))
        if endpoint is None:
            return Gate(
                "compatibility",
                "no data",
                f"no endpoint serves {checkpoint}, so it has no cell in the "
                "compatibility matrix; make one from the "
                "registry (Make endpoint) and ask for its cell",
            )
    found = pair_against_production(version=version, endpoint=endpoint)
    if found["problem"]:
        return Gate("compatibility", "no data", found["problem"])
    cell, reference, change = found["cell"], found["reference"], found["change"]
    if reference is None:
        return Gate(
            "compatibility",
            "pass",
            f"{cell.endpoint.name} on v{version.number}: AVG {cell_avg(cell=cell):.1f} in "
            f"compatibility run #{cell.run_id}; there is no production version to compare with yet",
            judged=True,
        )
    if change is None:
        return Gate(
            "compatibility",
            "pass",
            f"{cell.endpoint.name} on v{version.number} is the production pair "
            f"(compatibility run #{cell.run_id})",
            judged=True,
        )
    try:
        paired = read_cell_change(
            change,
            source=f"the change of compatibility run #{cell.run_id} against #{reference.run_id}",
        )
    except EvidenceError as error:
        return _unreadable("compatibility", error)
    shown = (
        f"{cell.endpoint.name} on v{version.number}: AVG "
        f"{paired.candidate:.1f} vs {paired.parent:.1f} for the "
        f"production pair (v{reference.version.number}), delta {paired.delta:+.1f} "
        f"[{paired.low:+.1f}, {paired.high:+.1f}] on {paired.n} paired cases of compatibility set "
        f"{cell.set_version} (runs #{cell.run_id} and #{reference.run_id})"
    )
    if compatibility_verdict(paired) == "fail":
        return Gate(
            "compatibility",
            "fail",
            f"worse than the production pair beyond the interval: {shown}",
            judged=True,
        )
    return Gate("compatibility", "pass", f"{paired.verdict}: {shown}", judged=True)


def with_judge_gate(gates: list[Gate]) -> list[Gate]:
    """``gates`` and the judge-calibration gate: where a gate read judged figures, the studio's
    evaluation judge must be calibrated against human labels at the configured agreement
    (``studio.annotation.selectors.judge_standing``); uncalibrated is "no data", below agreement
    "fail", so a promotion on such figures needs a reviewer's override as any other."""
    from studio.annotation.selectors import judge_standing
    from studio.evolution.services.runs import EVAL_JUDGE

    judged = [g.name for g in gates if g.judged]
    if not judged:
        return [
            *gates,
            Gate("judge calibration", "pass", "no figure of these gates was scored by a judge"),
        ]
    standing = judge_standing(judge=EVAL_JUDGE)
    status = "pass" if standing.ok else "no data" if standing.calibration is None else "fail"
    return [*gates, Gate("judge calibration", status, f"{' and '.join(judged)}: {standing.text}")]
