"""Rows the compatibility tests start from: a small source dev-set, and finished cells with given
scores.

``source_dataset`` imports the first cases of the generated world's dev-set under the name the
settings read (``COMPATIBILITY_SOURCE_DATASET``). ``finished_cell`` writes what an evaluation run of
the compatibility set leaves behind (a succeeded ``EvalRun`` with one ``CaseResult`` per case, whose
trajectory says how the agent's request ended: replied unless the test says otherwise) with the
scores a test chooses, so the gate, the colours and the alarm read it exactly as they read a run the
workers scored.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.utils import timezone

from studio.compatibility.models import Cell
from studio.compatibility.selectors import model_fingerprint
from studio.compatibility.services import compat_dataset_ensure
from studio.evolution.models import CaseResult, Dataset, EvalRun


def dev_cases(n: int, *, seed: int = 7) -> tuple[list[dict], dict]:
    """The first ``n`` cases of the generated world's dev-set, and its catalogue as a dict
    (``studio.traffic.testing.world_cases``: generated once per process and seed, copies per
    call)."""
    from studio.traffic.testing import world_cases

    cases, catalogue = world_cases(n, seed=seed)
    return cases, catalogue.to_dict()


def source_dataset(n: int = 40, *, seed: int = 7) -> Dataset:
    """The dev-set the compatibility set is drawn from, named as the settings say."""
    from django.conf import settings

    from studio.evolution.services.datasets import dataset_import

    cases, catalogue = dev_cases(n, seed=seed)
    return dataset_import(
        name=settings.COMPATIBILITY_SOURCE_DATASET,
        text="\n".join(json.dumps(c) for c in cases),
        source="dev.jsonl",
        actor=None,
        catalogue=catalogue,
    )


def finished_cell(
    *,
    endpoint,
    version,
    avg: Callable[[str], float],
    reason: str = "test",
    outcome: Callable[[str], str] = lambda case_id: "replied",
) -> Cell:
    """A finished cell of ``endpoint`` on ``version`` whose case ``id`` scored AVG ``avg(id)`` (0,
    0.5 or 1: Accuracy 1 and Effectiveness ``2 * avg - 1``, or both 0) and ended as ``outcome(id)``
    says (replied, fallback, ...)."""
    current, dataset = compat_dataset_ensure()
    ids = [c["id"] for c in current.cases]
    now = timezone.now()
    run = EvalRun.objects.create(
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=ids,
        status=EvalRun.SUCCEEDED,
        attempts=1,
        finished_at=now,
    )
    category = {c["id"]: c["category"] for c in current.cases}
    results = []
    for case_id in ids:
        score = avg(case_id)
        accuracy = 1.0 if score >= 0.5 else 0.0
        effectiveness = max(0.0, 2 * score - 1) if accuracy else 0.0
        verdict = {
            "accuracy": accuracy,
            "effectiveness": effectiveness,
            "avg": score,
            "reasons": [],
            "judge": "programmatic",
        }
        results.append(
            CaseResult(
                run=run,
                case_id=case_id,
                category=category[case_id],
                accuracy=accuracy,
                effectiveness=effectiveness,
                avg=score,
                verdict=verdict,
                reply="ok",
                route="public",
                latency_s=0.5,
                trajectory={"outcome": outcome(case_id), "outcome_reason": "", "model_calls": []},
            )
        )
    CaseResult.objects.bulk_create(results)
    return Cell.objects.create(
        model_fingerprint=model_fingerprint(endpoint=endpoint),
        endpoint=endpoint,
        version=version,
        version_digest=version.digest,
        set_version=current.version,
        dataset=dataset,
        run=run,
        reason=reason,
    )


def served_production(*, harness, folder, name: str = "served"):
    """A scripted endpoint (its script in ``folder``) named as serving ``harness``'s production
    label."""
    from pathlib import Path

    from studio.compatibility.models import LabelServer
    from studio.endpoints.models import ModelEndpoint

    script = Path(folder) / f"{name}.json"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("{}\n", encoding="utf-8")
    endpoint = ModelEndpoint.objects.create(
        name=name, route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    LabelServer.objects.create(harness=harness, label="production", endpoint=endpoint)
    return endpoint


def passing_compatibility(*, version, folder, cases: int = 12) -> Cell:
    """What makes the compatibility gate pass for a first production version: a source dev-set, an
    endpoint serving production and its finished cell on ``version``."""
    source_dataset(cases)
    endpoint = served_production(harness=version.harness, folder=folder)
    return finished_cell(endpoint=endpoint, version=version, avg=lambda case_id: 1.0)


def released_checkpoint(*, version, folder, decided_by):
    """An approved release of a trained checkpoint whose training run names ``version`` (what
    production serves, trained on ``version``: the retrain alarm's other side). Returns the training
    run."""
    from studio.releases.models import Release
    from studio.releases.testing import trained_checkpoint

    run = trained_checkpoint(folder)
    run.harness_version = version
    run.save(update_fields=["harness_version"])
    now = timezone.now()
    Release.objects.create(
        checkpoint_run=run,
        checkpoint_path=str(run.final_dir),
        checkpoint_fingerprint="f",
        harness_version=version,
        gates=[],
        gates_at=now,
        status=Release.APPROVED,
        decided_by=decided_by,
        decided_at=now,
    )
    return run
