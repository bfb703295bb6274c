"""The evolution form estimates the run time from measured per-case times of finished runs."""

from __future__ import annotations

import pytest

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import CaseResult, Dataset, EvalRun
from tests import personas as shared
from tests.evolution.evolution_testing import client_for

pytestmark = pytest.mark.django_db
demo_version = shared.demo_version  # the demo Harness as v1 (a fixture)
ROLES = ["operator", "reviewer", "ml_engineer", "admin"]


@pytest.fixture
def measured(personas, demo_version):
    """Endpoint `fast` with two finished runs (30 s over 60 cases) and a failed one; `slow` never
    finished."""
    dataset = Dataset.objects.create(name="dev-482", case_count=482)
    fast = ModelEndpoint.objects.create(name="fast", route=ModelEndpoint.TINY)
    slow = ModelEndpoint.objects.create(name="slow", route=ModelEndpoint.TINY)

    def run(endpoint, *, cases: int, wall_s: float, status: str):
        ids = [f"c{i}" for i in range(cases)]
        row = EvalRun.objects.create(
            version=demo_version,
            dataset=dataset,
            endpoint=endpoint,
            case_ids=ids,
            status=status,
            wall_s=wall_s,
        )
        CaseResult.objects.bulk_create(
            CaseResult(
                run=row,
                case_id=c,
                category="product_qa",
                accuracy=1,
                effectiveness=1,
                avg=1,
                verdict={},
                trajectory={},
                latency_s=0.1,
            )
            for c in ids
        )

    run(fast, cases=20, wall_s=6.0, status=EvalRun.SUCCEEDED)
    run(fast, cases=40, wall_s=24.0, status=EvalRun.SUCCEEDED)
    run(fast, cases=10, wall_s=500.0, status=EvalRun.FAILED)  # unfinished: not a measurement
    run(slow, cases=5, wall_s=50.0, status=EvalRun.RUNNING)
    return dataset


@pytest.mark.parametrize("role", ROLES)
def test_the_form_estimates_the_run_from_measured_per_case_times(personas, measured, role):
    page = (
        client_for(personas.by_role()[role]).get("/evolution/new/?dataset=dev-482").content.decode()
    )
    assert "Run time for the 482 cases of dev-482" in page
    # (6 + 24) s / 60 cases = 0.5 s per case; 482 cases: 241 s
    assert (
        "<strong>fast</strong>:\n      0.50 s per case (from 60 cases in 2 runs): about 4 min"
        in page
    )
    assert (
        "<strong>slow</strong>:\n      no measurement yet (no finished run on this endpoint)"
        in page
    )


def test_without_a_dataset_the_form_shows_the_time_per_case(personas, measured):
    page = client_for(personas.operator).get("/evolution/new/").content.decode()
    assert "0.50 s per case (from 60 cases in 2 runs)</li>" in page
    assert "Start from a dataset's page to see the estimate for its cases." in page


def test_the_outsider_sees_no_estimate(personas, measured):
    assert client_for(personas.outsider).get("/evolution/new/").status_code == 403
