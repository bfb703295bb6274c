"""The ML engineer in a real browser on a real training worker: a deployment replay on the tiny
route from its preset, its run page's link to the dashboard, the dashboard following the replay
until it ends, then the levels, their P95 and the CDF drawn. An operator reads the dashboard but
cannot start one."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow]


def test_a_tiny_replay_started_in_the_browser_is_read_on_its_dashboard(
    people, sign_in, settings, tmp_path, replay_cases
):
    from studio.jobs.testing import celery_worker

    cases = replay_cases(3)
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    queue = f"test-replay-{tmp_path.name[-8:]}"
    settings.CELERY_TRAIN_QUEUE = f"{queue}-train"
    with celery_worker(
        queue=queue, also_queues=(settings.CELERY_TRAIN_QUEUE,), lease_s=20, heartbeat_s=1
    ):
        page = sign_in("mei")
        page.goto("/training/new/replay/?preset=replay-tiny")
        page.fill("#in-cases", str(cases))
        page.locator("#in-cases").dispatch_event("change")
        expect(page.locator("#run-preview pre.command")).to_contain_text(f"--cases {cases}")
        page.click("#run-start")
        expect(page).to_have_url(re.compile(r"/training/runs/\d+/$"))
        run_id = re.search(r"/training/runs/(\d+)/$", page.url).group(1)
        page.click("#replay-dashboard-link")
        expect(page).to_have_url(re.compile(rf"/replay/{run_id}/$"))
        dashboard = page.locator("#replay-dashboard")
        expect(dashboard).to_have_attribute(
            "data-state", "finished", timeout=300_000
        )  # it reloads while it runs

        rows = page.locator("#level-table tbody tr")
        expect(rows).to_have_count(2)
        expect(rows.nth(0)).to_have_attribute("data-level", "1")
        expect(rows.nth(1)).to_have_attribute("data-level", "2")
        for level in ("1", "2"):
            expect(
                page.locator(f'tr[data-level="{level}"] td[data-key="wall_p95_s"]')
            ).to_have_text(re.compile(r"^\d+\.\d{3}$"))
        expect(page.locator("#chart-cdf")).to_have_attribute("data-drawn", "yes")
        expect(page.locator("#chart-cdf")).to_have_attribute("data-series", "2")
        expect(page.locator("#chart-latency")).to_have_attribute("data-drawn", "yes")
        expect(page.locator("#replay-command")).to_contain_text(
            "python -m serving replay --route cpu-engine-tiny"
        )
        expect(page.locator("#record-cases")).to_contain_text(str(cases))

        operator = sign_in("olivia")
        operator.goto("/replay/")
        expect(operator.locator(f'#replay-table tr[data-run="{run_id}"]')).to_contain_text("C=1: ")
        expect(operator.locator("text=Start a replay")).to_have_count(0)
        operator.click(f'#replay-table tr[data-run="{run_id}"] a[href="/replay/{run_id}/"]')
        expect(operator.locator("#level-table tbody tr")).to_have_count(2)
        expect(operator.locator("#chart-cdf")).to_have_attribute("data-drawn", "yes")
        response = operator.goto("/training/new/replay/?preset=replay-tiny")
        assert response.status == 403
