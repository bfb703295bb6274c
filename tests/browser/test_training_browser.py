"""The ML engineer's path in a real browser on real workers, on a fresh demo with no file outside
the repository: a tiny SFT run from its preset (the YAML beside the form following the edits), its
loss curve growing while the run goes, the checkpoint in the registry, an endpoint made of it in one
click and used in the playground, an evaluation from the registry's default form (T1 and the
project's generated instruction-following set, the checkpoint's base answering the same prompts) and
a deployment replay of it, the replay's dashboard (its fallback warning when the random model fell
back), and a release of it whose gates that replay and that evaluation fed (the capability gate has
data; the latency gate does not pass a replay that mostly fell back), approved by a reviewer. An
operator reads but cannot start a run."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

# the waits below add up to 22 minutes on a machine that hangs; each says what it waited for before
# the test's own timeout would end it without a word
pytestmark = [
    pytest.mark.browser,
    pytest.mark.services,
    pytest.mark.slow,
    pytest.mark.timeout(1500),
]


def test_the_ml_engineers_path_from_a_tiny_sft_run_to_a_release_a_reviewer_approves(
    people, demo, sign_in, settings, tmp_path, replay_cases
):
    from studio.jobs.testing import celery_worker

    cases = replay_cases(2)
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    queue = f"test-browser-{tmp_path.name[-8:]}"
    settings.CELERY_TRAIN_QUEUE = f"{queue}-train"
    with celery_worker(
        queue=queue, also_queues=(settings.CELERY_TRAIN_QUEUE,), lease_s=20, heartbeat_s=1
    ):
        page = sign_in("mei")
        page.goto("/training/")
        page.click("text=Smoke test on the tiny model")
        expect(page.locator("#run-preview pre.yaml")).to_contain_text("max_steps: 2")
        # 12 steps: on an idle machine the tiny model's 4 ran between two of the dashboard's 2 s
        # polls, and the curve was never seen mid-run
        page.fill("#in-max_steps", "12")
        page.locator("#in-max_steps").dispatch_event("change")
        expect(page.locator("#run-preview pre.yaml")).to_contain_text(
            "max_steps: 12"
        )  # the YAML follows the form
        expect(page.locator("#run-preview pre.command")).to_contain_text(
            "python -m training sft --config"
        )
        page.click("#run-start")
        expect(page).to_have_url(re.compile(r"/training/runs/\d+/$"))
        run_path = page.url

        loss = page.locator("#chart-loss")
        expect(loss).to_have_attribute(
            "data-n", re.compile(r"^([1-9]|1[01])$"), timeout=240_000
        )  # drawn mid-run
        assert page.locator("#dashboard").get_attribute("data-active") == "yes"
        first = int(loss.get_attribute("data-n"))
        expect(loss).to_have_attribute(
            "data-n", re.compile(rf"^(?!{first}$)\d+$"), timeout=120_000
        )  # it grew
        expect(page.locator("#run-status")).to_have_text(
            "ran", timeout=180_000
        )  # the page reloads at the end
        expect(page.locator("#chart-loss")).to_have_attribute("data-n", "12")
        expect(page.locator("#run-outcome")).to_contain_text("trained 12 steps")

        page.goto("/training/checkpoints/")
        row = page.locator("#checkpoint-table tbody tr").first
        expect(row).to_contain_text("sft")
        run_id = re.search(r"/training/runs/(\d+)/$", run_path).group(1)
        row.locator("button", has_text="Make endpoint").click()
        expect(page).to_have_url(re.compile(r"/endpoints/(\?made=\d+)?(#endpoint-\d+)?$"))
        expect(page.locator("body")).to_contain_text(f"run-{run_id}-sft")

        # the endpoint runs the agent in the playground (4 steps of a random 2-layer model: it falls
        # back)
        page.goto("/playground/?example=product_price")
        page.select_option("select[name=endpoint]", label=f"run-{run_id}-sft")
        page.click("#playground-form button")
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator("#job-status")).to_have_attribute(
            "data-status", "succeeded", timeout=180_000
        )
        expect(page.locator("body")).to_contain_text(f"run-{run_id}-sft")

        # evaluated from the registry's form as it comes, on fewer items: T1 (one case: the random
        # model runs each to the Harness's time budget) and the instruction-following set (the
        # project's generated prompts: no file outside the repository), the model filled in
        assert "HARNESS_IFEVAL_PATH" not in os.environ
        page.goto("/training/checkpoints/")
        page.locator("#checkpoint-table tbody tr").first.locator("a", has_text="Evaluate").click()
        expect(page.locator("#in-model")).to_have_value(
            re.compile(rf"/run-{run_id}[^/]*/sft/final$")
        )
        for unwanted in ("variant_qa", "prompt_robustness"):
            page.locator(f"#in-sets input[value={unwanted}]").uncheck()
        page.fill("#in-cases", "1")
        page.fill("#in-ifeval", "2")
        page.click("#run-start")
        expect(page).to_have_url(re.compile(r"/training/runs/\d+/$"))
        eval_path = page.url
        page.locator("#run-status").locator("xpath=..").locator("a").first.click()  # its job's page
        expect(page.locator("#job-status")).to_have_attribute(
            "data-status", "succeeded", timeout=300_000
        )
        page.goto(eval_path)
        expect(page.locator('#eval-table tr[data-set="live_qa"]')).to_contain_text(
            "T1 Live-Stream QA"
        )
        expect(page.locator("#eval-set-label")).to_have_text(
            "generated instruction-following set (IFEval checkers), seed 0"
        )
        expect(page.locator("#eval-base")).to_contain_text("on the same prompts")
        expect(page.locator("#run-facts")).to_contain_text(f"from training run #{run_id}")
        page.goto("/training/checkpoints/")
        eval_id = re.search(r"/training/runs/(\d+)/$", eval_path).group(1)
        expect(page.locator("#checkpoint-table tbody tr").first).to_contain_text(f"#{eval_id}: ")

        # a deployment replay of the checkpoint from the registry, read on its dashboard
        page.locator("#checkpoint-table tbody tr").first.locator("a.replay-checkpoint").click()
        expect(page.locator("#in-route")).to_have_value(
            re.compile(rf"^local:/.*/run-{run_id}[^/]*/sft/final$")
        )
        for name, value in (
            ("cases", str(cases)),
            ("concurrency", "1"),
            ("warmup", "0"),
            ("measured", "2"),
            ("max_tokens", "16"),
        ):
            page.fill(f"#in-{name}", value)
        page.click("#run-start")
        expect(page).to_have_url(re.compile(r"/training/runs/\d+/$"))
        replay_id = re.search(r"/training/runs/(\d+)/$", page.url).group(1)
        page.click("#replay-dashboard-link")
        expect(page.locator("#replay-dashboard")).to_have_attribute(
            "data-state", "finished", timeout=300_000
        )
        expect(page.locator('tr[data-level="1"] td[data-key="wall_p95_s"]')).to_have_text(
            re.compile(r"^\d+\.\d{3}$")
        )
        expect(page.locator("#chart-cdf")).to_have_attribute("data-drawn", "yes")
        fell_back = (
            page.locator("#replay-fallback-warning").count() == 1
        )  # a random 2-layer model mostly does

        # a release of it, its gates fed by that replay and that IFEval run; the reviewer approves
        # it
        page.goto("/training/checkpoints/")
        page.locator("#checkpoint-table tbody tr").first.locator("a.release-checkpoint").click()
        expect(page.locator("#in-checkpoint")).to_have_value(
            re.compile(rf"/run-{run_id}[^/]*/sft/final$")
        )
        page.select_option("#in-harness_version", "livestream-avatar@v1")
        page.click("#release-check")
        preview = page.locator("#gate-preview")
        expect(preview.locator('tr[data-gate="latency"] a.gate-run')).to_have_attribute(
            "href", f"/training/runs/{replay_id}/"
        )
        expect(preview.locator('tr[data-gate="general capability"] a.gate-run')).to_have_attribute(
            "href", f"/training/runs/{eval_id}/"
        )
        capability = preview.locator('tr[data-gate="general capability"]')
        expect(capability).to_have_attribute(
            "data-status", re.compile(r"^(pass|fail)$")
        )  # it has data:
        expect(capability).to_contain_text(
            "vs its base"
        )  # the checkpoint and its base on the same prompts
        if fell_back:  # no "pass" for a replay that timed the fallback
            expect(preview.locator('tr[data-gate="latency"]')).to_have_attribute(
                "data-status", "fail"
            )
            expect(preview.locator('tr[data-gate="latency"]')).to_contain_text(
                "requests fell back to the Harness's fallback reply"
            )
        page.click("#release-draft")
        expect(page).to_have_url(re.compile(r"/releases/\d+/$"))
        release_url = page.url
        reviewer = sign_in("rafael")
        reviewer.goto(release_url)
        reviewer.fill("#in-reason", "the tiny checkpoint, end to end")
        reviewer.fill(
            "#in-override_reason",
            "no evolution stage evaluated v1; the tiny model is not held to the floor",
        )
        reviewer.click("#release-approve")
        expect(reviewer.locator("#release-status")).to_have_text("approved")

        operator = sign_in("olivia")
        operator.goto(run_path)
        expect(operator.locator("#chart-loss")).to_have_attribute(
            "data-n", "12"
        )  # operators read the dashboard
        expect(operator.locator("#make-endpoint")).to_have_count(0)
        operator.goto("/training/")
        expect(operator.locator("#start-runs")).to_have_count(0)
        response = operator.goto("/training/new/sft/")
        assert response.status == 403
