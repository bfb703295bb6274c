"""The held-out edit benchmark of a stage under two models: the four evaluation runs it needs and
its figures.

A stage's confirmed edits turned its parent version into its candidate, chosen on dev-split
failures. Both versions are evaluated, unchanged, on the evolution's held-out cases under each of
two endpoints (a registry checkpoint's endpoint, *Make endpoint*, or any other): four evaluation
runs of the evolution app, started here and scored by any worker; a finished run of the same version
and endpoint that scored those cases already is reused. The figures are
``evaluation.edit_transfer``'s.

A run whose cases mostly ended in the Harness's fallback reply (the one rule,
``evaluation.summary.mostly_fell_back``) is no measurement of the edits: it is shown with the
"Mostly fallback" badge, never as "succeeded", and a model whose reduction rests on such a run gets
no figure, only the words saying so (``fallback``), nor does the difference between the models.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import DatasetCase, EvalRun, Stage
from studio.jobs.fallback import summary_flag


class EditBenchmarkError(ValueError):
    """A benchmark that cannot start; the message names the field."""


def heldout_ids(*, stage: Stage) -> list[str]:
    """The evolution's held-out cases: scored by every stage, never shown to a diagnoser."""
    evolution = stage.evolution
    held = set(
        DatasetCase.objects.filter(
            dataset=evolution.dataset, split=DatasetCase.HELDOUT, case_id__in=evolution.case_ids
        ).values_list("case_id", flat=True)
    )
    return [c for c in evolution.case_ids if c in held]


def _run_for(*, version, endpoint: ModelEndpoint, stage: Stage, ids: list[str]) -> EvalRun | None:
    """The newest run of ``version`` on ``endpoint`` over the dataset that covers ``ids`` and did
    not fail."""
    wanted = set(ids)
    for run in (
        EvalRun.objects.filter(version=version, endpoint=endpoint, dataset=stage.evolution.dataset)
        .exclude(status=EvalRun.FAILED)
        .order_by("-pk")
    ):
        if wanted <= set(run.case_ids):
            return run
    return None


def run_fallback(*, run: EvalRun | None) -> str:
    """'22 of 26 cases fell back' for a run whose cases mostly fell back (the one rule and its
    words, ``evaluation.summary``), else ''."""
    from evaluation.summary import fell_back_counts

    outcomes = ((run.summary or {}) if run is not None else {}).get("outcomes") or {}
    return fell_back_counts([("", outcomes.get("fallback", 0), outcomes.get("n", 0))])


@dataclass
class Benchmark:
    stage: Stage
    endpoints: list[ModelEndpoint]
    ids: list[str]
    runs: dict[tuple[int, str], EvalRun | None]  # (endpoint id, "parent" | "candidate") -> run
    result: dict[str, Any] | None

    @property
    def missing(self) -> int:
        return sum(1 for run in self.runs.values() if run is None)

    @property
    def grid(self) -> list[dict[str, Any]]:
        """One row per model: its endpoint and, per side, the run and its fallback words."""
        return [
            {
                "endpoint": e,
                "sides": [
                    {"run": run, "flag": summary_flag({"": run.summary}) if run else ""}
                    for run in (self.runs[(e.pk, "parent")], self.runs[(e.pk, "candidate")])
                ],
            }
            for e in self.endpoints
        ]

    @property
    def rests_on_fallback(self) -> bool:
        """Whether any of the four runs mostly fell back (the difference is then no figure)."""
        return any(run_fallback(run=run) for run in self.runs.values())


def _check(stage: Stage, endpoints: list[ModelEndpoint]) -> list[str]:
    if stage.candidate_version_id is None:
        raise EditBenchmarkError(
            f"stage: stage {stage.number} has no committed candidate yet: confirm its edits first"
        )
    if len(endpoints) != 2 or endpoints[0].pk == endpoints[1].pk:
        raise EditBenchmarkError("endpoints: choose two different models (a and b)")
    ids = heldout_ids(stage=stage)
    if not ids:
        raise EditBenchmarkError(
            f"stage: evolution #{stage.evolution_id} has no held-out case (its dataset's "
            "held-out share is 0); the benchmark needs cases no diagnoser saw"
        )
    return ids


def edit_benchmark(*, stage: Stage, endpoints: list[ModelEndpoint]) -> Benchmark:
    """The four runs as they stand and, once all succeeded,
    ``evaluation.edit_transfer.edit_transfer``."""
    from evaluation.edit_transfer import edit_transfer

    ids = _check(stage, endpoints)
    runs = {
        (e.pk, side): _run_for(version=version, endpoint=e, stage=stage, ids=ids)
        for e in endpoints
        for side, version in (
            ("parent", stage.parent_version),
            ("candidate", stage.candidate_version),
        )
    }
    result = None
    if all(run is not None and run.status == EvalRun.SUCCEEDED for run in runs.values()):
        wanted = set(ids)

        def rows(run: EvalRun) -> list[dict]:
            return [
                {
                    "id": r.case_id,
                    "split": r.split,
                    "accuracy": r.accuracy,
                    "effectiveness": r.effectiveness,
                }
                for r in run.results.filter(case_id__in=wanted)
            ]

        result = edit_transfer(
            models={
                e.name: (rows(runs[(e.pk, "parent")]), rows(runs[(e.pk, "candidate")]))
                for e in endpoints
            },
            resamples=2000,
        )
        for e in endpoints:  # a reduction over fallbacks measures the fallback: say so instead
            before = run_fallback(run=runs[(e.pk, "parent")])
            after = run_fallback(run=runs[(e.pk, "candidate")])
            result["models"][e.name]["fallback"] = "; ".join(
                f"{side}: {words}"
                for side, words in (("before", before), ("after", after))
                if words
            )
    return Benchmark(stage=stage, endpoints=endpoints, ids=ids, runs=runs, result=result)


def edit_benchmark_start(*, stage: Stage, endpoints: list[ModelEndpoint], actor: User) -> Benchmark:
    """Start the runs the benchmark lacks (each an ordinary evaluation run, queued for the
    workers)."""
    from studio.evolution.services.runs import eval_run_start

    bench = edit_benchmark(stage=stage, endpoints=endpoints)
    for endpoint in endpoints:
        for side, version in (
            ("parent", stage.parent_version),
            ("candidate", stage.candidate_version),
        ):
            if bench.runs[(endpoint.pk, side)] is None:
                eval_run_start(
                    version=version,
                    dataset=stage.evolution.dataset,
                    endpoint=endpoint,
                    case_ids=bench.ids,
                    actor=actor,
                )
    return edit_benchmark(stage=stage, endpoints=endpoints)
