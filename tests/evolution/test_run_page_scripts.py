"""The evaluation run page's tab title is its name, and it loads the pinned Chart.js
(static/vendor/) and its chart driver once, below the page (they once sat inside {% block title %}
as well)."""

import pytest
from evolution_testing import client_for, small_world

from studio.evolution.services.runs import eval_run_start

pytestmark = pytest.mark.django_db


def test_the_run_pages_title_is_its_name_and_its_chart_scripts_load_once(
    personas, demo_sets_dir, demo_files, tmp_path, django_capture_on_commit_callbacks
):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=demo_files, actor=personas.admin, size=2, tmp_path=tmp_path
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_run_start(
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            case_ids=list(dataset.cases.values_list("case_id", flat=True)),
            actor=personas.operator,
        )
    page = client_for(personas.reviewer).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert page.split("<title>", 1)[1].split("</title>", 1)[0] == f"Run #{run.pk} · Harness Studio"
    assert page.count('src="/static/vendor/chart-4.4.7.umd.min.js"') == 1
    assert page.count('src="/static/evolution/charts.js"') == 1
