"""Comparisons: the ablation's Table 4 rebuilt from its folder (``training.ablation``'s own table
code), and two checkpoints compared per evaluation set with the one paired comparison
(``evaluation.compare.paired_difference``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from studio.filecache import FileCache, file_stats
from studio.training.models import TrainingRun

_ABLATIONS = FileCache("ablation-tables")  # the table per change of the files it reads


def _ablation_key(folder: Path) -> tuple:
    """What the table depends on: steps.json, the config and every evaluation file (their stats)."""
    return (
        str(folder),
        *file_stats(
            folder / "steps.json", folder / "ablation_config.json", *sorted(folder.glob("eval/*/*"))
        ),
    )


def ablation_data(*, run: TrainingRun) -> dict[str, Any] | None:
    """The ablation's table, steps and Markdown, rebuilt from the run folder by
    ``training.ablation``'s own table code (``read_ablation``), once per change of the files it
    reads."""
    from training.ablation import read_ablation

    folder = run.path / TrainingRun.ABLATION
    return _ABLATIONS.get_or_compute(_ablation_key(folder), lambda: read_ablation(folder))


def ablation_progress(*, run: TrainingRun) -> tuple[int, int]:
    """(steps done, steps planned) of an ablation run, from its folder (no table built)."""
    from harness.config_schema import ConfigError, load_config
    from training.ablation import Ablation, AblationConfig

    config_file = run.path / run.steps[0]["config_file"] if run.steps else None
    try:
        config = load_config(AblationConfig, config_file)
    except (ConfigError, TypeError):
        return 0, 0
    states = Ablation(config).step_states()
    return sum(1 for s in states if s["done"]), len(states)


def ablation_dashboard(*, run: TrainingRun) -> dict[str, Any] | None:
    """The ablation dashboard: the Table-4 table with intervals, the T2 step-level table, how
    requests ended and the wall time per step, as rows in the order ``training.ablation`` writes
    them, and the data of its charts (scores per set and model; seconds per step)."""
    from training.ablation import (
        LABELS,
        MODELS,
        OUTCOME_SETS,
        OUTCOMES,
        SET_LABELS,
        STEP_DIMENSIONS,
    )

    data = ablation_data(run=run)
    if data is None:
        return None
    table = data["table"]
    scores = [
        {
            "model": m,
            "label": LABELS[m],
            "cells": [table["models"].get(m, {}).get(s) for s in SET_LABELS],
        }
        for m in MODELS
    ]
    steps = [
        {
            "model": m,
            "label": LABELS[m],
            "cells": [table.get("t2_steps", {}).get(m, {}).get(d) for d in STEP_DIMENSIONS],
        }
        for m in MODELS
    ]
    outcomes = []
    for m in MODELS:
        cells = []
        for set_name in OUTCOME_SETS:
            counts = table.get("outcomes", {}).get(m, {}).get(set_name)
            if counts is not None:
                counts = {**counts, "other": counts["n"] - sum(counts[name] for name in OUTCOMES)}
            cells.append(counts)
        outcomes.append({"model": m, "label": LABELS[m], "cells": cells})
    chart = {
        "sets": list(SET_LABELS.values()),
        "models": [
            {"label": row["label"], "scores": [c["score"] if c else None for c in row["cells"]]}
            for row in scores
        ],
        "steps": [
            {
                "name": s["name"],
                "wall_s": round(s["wall_s"], 1) if s["wall_s"] is not None else None,
            }
            for s in data["steps"]
        ],
    }
    return {
        "config": data["config"],
        "set_labels": list(SET_LABELS.values()),
        "dimension_labels": list(STEP_DIMENSIONS.values()),
        "outcome_labels": [SET_LABELS[s].removesuffix(" AVG") for s in OUTCOME_SETS],
        "scores": scores,
        "t2_steps": steps,
        "outcomes": outcomes,
        "targets": table["targets"],
        "steps": data["steps"],
        "done": sum(1 for s in data["steps"] if s["done"]),
        "markdown": data["markdown"],
        "chart": chart,
    }


# -- comparing two checkpoints
# ----------------------------------------------------------------------------

COMPARE_RESAMPLES = 10_000  # as the ablation (training.ablation.AblationConfig.resamples)


@dataclass
class SetComparison:
    """One evaluation set scored on both checkpoints: both scores, and B - A with its interval."""

    name: str
    label: str
    a_run: TrainingRun | None  # the evaluation run the scores come from
    b_run: TrainingRun | None
    a_score: float | None = None
    b_score: float | None = None
    a_n: int = 0
    b_n: int = 0
    difference: dict[str, float] | None = None
    problem: str = ""  # why there is no interval


def _evaluations_of(run: TrainingRun) -> list[TrainingRun]:
    from studio.jobs.models import Job

    return list(
        TrainingRun.objects.filter(kind=TrainingRun.EVAL, parent=run, job__status=Job.SUCCEEDED)
        .select_related("job")
        .order_by("-created_at", "-id")
    )


def _newest_scores(evaluations: list[TrainingRun], set_name: str):
    from training.ablation import item_scores

    for evaluation in evaluations:
        scores = item_scores(evaluation.path / "eval", set_name)
        if scores:
            return evaluation, scores
    return None, None


def checkpoint_compare(
    *, a: TrainingRun, b: TrainingRun, resamples: int = COMPARE_RESAMPLES
) -> list[SetComparison]:
    """Per evaluation set, the two checkpoints' scores from their newest finished evaluation runs
    that scored it (their per-item JSONL in RUN/eval/, read by ``training.ablation.item_scores``),
    and B - A paired item by item with the paired-bootstrap 95% interval by the one paired
    comparison (``evaluation.compare.paired_difference``): over the items both scored, saying how
    many only one side scored; sets with no item in common get a message instead of an interval."""
    from evaluation.compare import paired_difference
    from studio.training.configs import EVAL_SET_LABELS

    a_evals, b_evals = _evaluations_of(a), _evaluations_of(b)
    out = []
    for name, label in EVAL_SET_LABELS.items():
        a_run, a_scores = _newest_scores(a_evals, name)
        b_run, b_scores = _newest_scores(b_evals, name)
        row = SetComparison(name=name, label=label, a_run=a_run, b_run=b_run)
        for side, scores in (("a", a_scores), ("b", b_scores)):
            if scores:
                setattr(row, f"{side}_score", 100 * sum(scores.values()) / len(scores))
                setattr(row, f"{side}_n", len(scores))
        missing = [f"run #{run.pk}" for run, scores in ((a, a_scores), (b, b_scores)) if not scores]
        if missing:
            row.problem = (
                f"not scored on {label} yet for {' and '.join(missing)}: evaluate it with this set"
            )
            out.append(row)
            continue
        try:
            row.difference = paired_difference(a_scores, b_scores, resamples=resamples)
        except ValueError:
            row.problem = (
                f"no item in common: run #{a.pk}'s evaluation "
                f"#{a_run.pk} and run #{b.pk}'s evaluation "
                f"#{b_run.pk} scored different items; evaluate both with the same cases"
            )
        out.append(row)
    return out
