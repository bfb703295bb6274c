"""The ML engineer in a real browser on a real training worker: a tiny SFT run from its preset, the
YAML beside the form following the edits, the loss curve growing while the run goes, the checkpoint
in the registry and an endpoint made of it in one click. An operator reads but cannot start."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow]


def test_a_tiny_sft_run_from_the_browser_grows_its_curve_and_becomes_an_endpoint(people, sign_in, settings,
                                                                                tmp_path):
    from studio.jobs.testing import celery_worker

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    queue = f"test-browser-{tmp_path.name[-8:]}"
    settings.CELERY_TRAIN_QUEUE = f"{queue}-train"
    with celery_worker(queue=queue, also_queues=(settings.CELERY_TRAIN_QUEUE,), lease_s=20, heartbeat_s=1):
        page = sign_in("mei")
        page.goto("/training/")
        page.click("text=Smoke test on the tiny model")
        expect(page.locator("#run-preview pre.yaml")).to_contain_text("max_steps: 2")
        page.fill("#in-max_steps", "4")
        page.locator("#in-max_steps").dispatch_event("change")
        expect(page.locator("#run-preview pre.yaml")).to_contain_text("max_steps: 4")  # the YAML follows the form
        expect(page.locator("#run-preview pre.command")).to_contain_text("python -m training sft --config")
        page.click("#run-start")
        expect(page).to_have_url(re.compile(r"/training/runs/\d+/$"))
        run_path = page.url

        loss = page.locator("#chart-loss")
        expect(loss).to_have_attribute("data-n", re.compile(r"^[123]$"), timeout=240_000)  # drawn mid-run
        assert page.locator("#dashboard").get_attribute("data-active") == "yes"
        first = int(loss.get_attribute("data-n"))
        expect(loss).to_have_attribute("data-n", re.compile(rf"^(?!{first}$)\d+$"), timeout=120_000)  # it grew
        expect(page.locator("#run-status")).to_have_text("ran", timeout=180_000)  # the page reloads at the end
        expect(page.locator("#chart-loss")).to_have_attribute("data-n", "4")
        expect(page.locator("#run-outcome")).to_contain_text("trained 4 steps")

        page.goto("/training/checkpoints/")
        row = page.locator("#checkpoint-table tbody tr").first
        expect(row).to_contain_text("sft")
        run_id = re.search(r"/training/runs/(\d+)/$", run_path).group(1)
        row.locator("button", has_text="Make endpoint").click()
        expect(page).to_have_url(re.compile(r"/endpoints/$"))
        expect(page.locator("body")).to_contain_text(f"run-{run_id}-sft")

        operator = sign_in("olivia")
        operator.goto(run_path)
        expect(operator.locator("#chart-loss")).to_have_attribute("data-n", "4")  # operators read the dashboard
        expect(operator.locator("#make-endpoint")).to_have_count(0)
        operator.goto("/training/")
        expect(operator.locator("#start-runs")).to_have_count(0)
        response = operator.goto("/training/new/sft/")
        assert response.status == 403
