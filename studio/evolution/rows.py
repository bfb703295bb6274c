"""Row adapters of evaluation runs: a stored ``CaseResult`` as the evaluation core's row and back,
and the catalogue a dataset's cases refer to.

A module of their own, importing only the models: the evaluation runs (``runs``, ``chunks``), the
compatibility matrix's cells and the annotation queue's calibration all read rows, and none of them
has to import another's services for it (docs/architecture.md §1, ``tests/test_layers.py``).
"""

from __future__ import annotations

from typing import Any

from studio.evolution.models import CaseResult, Dataset


def _reason_field(codes: list[str]) -> str:
    return ("," + ",".join(dict.fromkeys(codes)) + ",")[:500] if codes else ""


def result_fields(row: dict[str, Any]) -> dict[str, Any]:
    """The ``CaseResult`` columns of a scorer row."""
    verdict = row["verdict"]
    return dict(
        accuracy=float(verdict["accuracy"]),
        effectiveness=float(verdict["effectiveness"]),
        avg=float(verdict["avg"]),
        reason_codes=_reason_field([r["code"] for r in verdict["reasons"]]),
        verdict=verdict,
        reply=row["reply"],
        route=row["route"],
        trajectory=row["trajectory"] or {},
        latency_s=row["latency_s"],
    )


def result_row(result: CaseResult) -> dict[str, Any]:
    """A stored ``CaseResult`` as the evaluation core's row (``evaluation.scoring``)."""
    from evaluation.scoring import request_outcome

    error = (
        next(
            (
                r.get("detail", "")
                for r in result.verdict.get("reasons", [])
                if r.get("code") == "run_error"
            ),
            None,
        )
        if result.route == "error"
        else None
    )
    return {
        "id": result.case_id,
        "category": result.category,
        "split": result.split,
        "reply": result.reply,
        "route": result.route,
        "outcome": request_outcome(result.trajectory, error=error),
        "verdict": result.verdict,
        "trajectory": result.trajectory or None,
        "latency_s": result.latency_s,
        **({"error": error} if error else {}),
    }


def catalogue_for(dataset: Dataset):
    """The catalogue a dataset's cases refer to: its own snapshot, else the demo catalogue."""
    from harness.livestream import Catalogue, demo_catalogue

    return (
        Catalogue.from_dict(dataset.catalogue, source=f"dataset {dataset.name}")
        if dataset.catalogue
        else demo_catalogue()
    )
