"""A proposal replayed on the cases it targets before a reviewer sees it: "fixes N of M
(predicted)".

Each valid proposal's edits are applied to the Harness files and its targeted
cases are scored again through the one case scorer
(:class:`evaluation.scoring.CaseScorer`: the same runtime, the case's Harness
variant, canned tools and the version's judge settings that the evaluation run
used). A case counts as fixed when it now passes (:func:`evaluation.scoring.passed`).
At most ``MAX_REPLAY_CASES`` targeted cases are replayed per proposal, in
their order, so a diagnosis of a large cluster stays bounded; the prediction
says so when it replayed fewer than it targets.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evaluation.compatibility import FAMILIES, holds_under_variants
from evaluation.diagnosis.edits import apply_edits
from evaluation.diagnosis.proposals import Proposal
from evaluation.scoring import passed
from harness.bundle import Bundle

MAX_REPLAY_CASES = 20


def prediction_text(replay: Mapping[str, Any]) -> str:
    """The line shown beside a proposal's diff, e.g. "fixes 3 of 4 targeted cases (predicted)"."""
    if not replay:
        return ""
    fixed, replayed, targeted = replay["fixed"], replay["replayed"], replay["targeted"]
    text = f"fixes {fixed} of {targeted} targeted case{'s' if targeted != 1 else ''} (predicted)"
    if replayed < targeted:
        text = (
            f"fixes {fixed} of the {replayed} replayed of {targeted} targeted cases (predicted; "
            f"at most {MAX_REPLAY_CASES} are replayed)"
        )
    if replay.get("errors"):
        text += f"; {replay['errors']} could not be replayed ({replay['error']})"
    variants = replay.get("variants")
    if variants:
        text += f"; holds under variants in {variants['held']} of {targeted}"
        if variants["broken"]:
            shown = [
                f"{case_id} fails with {FAMILIES[families[0]]}"
                for case_id, families in variants["broken"].items()
            ]
            text += (
                f"; {len(shown)} fixed only in the exact wording ({', '.join(shown[:3])}"
                + (", ..." if len(shown) > 3 else "")
                + ")"
            )
    return text


def replay_proposal(
    proposal: Proposal,
    *,
    files: dict[str, str],
    cases: Mapping[str, dict],
    scorer_for: Callable[[Bundle], Any],
    max_cases: int = MAX_REPLAY_CASES,
    variants_check: bool = True,
) -> dict[str, Any]:
    """Score ``proposal``'s targeted cases under the edited Harness; store and return the replay.

    ``scorer_for(bundle)`` makes the scorer (``CaseScorer.for_bundle`` with the run's policy and
    catalogue); ``cases`` maps case id -> case dict. An invalid proposal is not replayed.
    ``variants_check``: each fixed case is also scored under the compatibility variants of the
    edited Harness.
    """
    if not proposal.valid:
        return {}
    _, bundle = apply_edits(files, proposal.edits)
    ids = [i for i in proposal.target_case_ids if i in cases][:max_cases]
    fixed: list[str] = []
    errors: list[str] = []
    scorer = scorer_for(bundle)
    try:
        for case_id in ids:
            row = scorer.score(cases[case_id])
            if row.get("error"):
                errors.append(row["error"])
            elif passed(row["verdict"]):
                fixed.append(case_id)
        variants = (
            holds_under_variants(fixed=fixed, cases=cases, score=scorer.score)
            if variants_check and fixed
            else None
        )  # nothing fixed: nothing to hold
    finally:
        scorer.close()
    proposal.replay = {
        "targeted": len(proposal.target_case_ids),
        "replayed": len(ids),
        "fixed": len(fixed),
        "fixed_case_ids": fixed,
        "errors": len(errors),
        "error": errors[0] if errors else "",
    }
    if variants is not None:
        proposal.replay["variants"] = variants
    return proposal.replay
