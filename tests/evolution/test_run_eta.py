"""A running evaluation shows how long it has left, from the rate of its current attempt."""

from datetime import timedelta

import pytest
from django.utils import timezone
from evolution_testing import small_world

from studio.evolution import selectors
from studio.evolution.models import CaseResult, EvalRun
from studio.evolution.services.runs import eval_run_start


def _result(run: EvalRun, case_id: str, at) -> None:
    row = CaseResult.objects.create(
        run=run,
        case_id=case_id,
        category="product_qa",
        accuracy=1,
        effectiveness=1,
        avg=1,
        verdict={},
        trajectory={},
        attempt=run.attempts,
    )
    CaseResult.objects.filter(pk=row.pk).update(created_at=at)


@pytest.mark.django_db
def test_the_run_page_shows_an_eta_while_it_runs(
    personas, demo_sets_dir, defect_files, tmp_path, client
):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=6, tmp_path=tmp_path
    )
    run = eval_run_start(
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=list(dataset.cases.values_list("case_id", flat=True)),
        actor=personas.operator,
    )
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.RUNNING, attempts=1)
    run.refresh_from_db()
    assert selectors.run_eta(run=run) is None  # nothing scored yet: no rate
    start = timezone.now() - timedelta(seconds=20)
    for i, case_id in enumerate(run.case_ids[:3]):
        _result(run, case_id, start + timedelta(seconds=10 * i))
    # 2 cases in the 20 s after the first result: 10 s a case, 3 cases left
    assert selectors.run_eta(run=run, now=start + timedelta(seconds=20)) == pytest.approx(30)
    client.force_login(personas.operator)
    page = client.get(f"/evolution/runs/{run.pk}/status/").content.decode()
    assert f'id="run-eta-{run.pk}"' in page and " s left" in page
    EvalRun.objects.filter(pk=run.pk).update(status=EvalRun.SUCCEEDED)
    run.refresh_from_db()
    assert selectors.run_eta(run=run) is None
    assert "left" not in client.get(f"/evolution/runs/{run.pk}/status/").content.decode()
