"""A release in a real browser, its gates fed by runs a real worker ran: a one-step SFT run of the tiny
model gives the checkpoint; a replay of it on the local route (local:FINAL) and an IFEval evaluation
of it feed the latency and capability gates. The ML engineer checks the gates and drafts the release;
an operator reads it but has no way to decide; the reviewer is refused without an override while a
gate blocks, approves with one, and downloads the manifest that names the runs."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.services, pytest.mark.slow]


def _finished(run, timeout: float):
    from studio.jobs.models import Job
    from studio.jobs.testing import wait_for
    from studio.training.models import TrainingRun

    def ended():
        job = Job.objects.get(pk=TrainingRun.objects.get(pk=run.pk).job_id)
        return None if job.is_active else job

    job = wait_for(ended, timeout=timeout, what=f"run #{run.pk}'s job to end")
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail[-3000:]
    return TrainingRun.objects.get(pk=run.pk)


def _gated_checkpoint(people, cases):
    """(checkpoint run, replay run, IFEval run), each started with run_start and run by the worker."""
    from studio.training.configs import EvalRunConfig, ReplayRunConfig, SFTStageConfig
    from studio.training.presets import PRESETS, preset_config
    from studio.training.services import run_start

    mei = people["ml_engineer"]
    preset = PRESETS["tiny-smoke"]
    sft = run_start(kind="sft", config=dataclasses.replace(preset_config(preset, SFTStageConfig), max_steps=1),
                    actor=mei, preset=preset)
    final = _finished(sft, timeout=400).final_dir
    replay = run_start(kind="replay", actor=mei, config=ReplayRunConfig(
        route=f"local:{final}", harness="livestream-avatar@v1", cases=str(cases), concurrency=[1], warmup=0,
        measured=2, max_tokens=16))
    ifeval = run_start(kind="eval", actor=mei, config=EvalRunConfig(model=str(final), sets=["ifeval"], ifeval=2))
    return sft, _finished(replay, timeout=400), _finished(ifeval, timeout=400)


def test_a_reviewer_approves_a_release_fed_by_a_tiny_replay_and_an_ifeval_run(people, demo, sign_in, settings,
                                                                               tmp_path, replay_cases):
    from studio.jobs.testing import celery_worker
    from studio.releases.models import Release

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    queue = f"test-release-{tmp_path.name[-8:]}"
    settings.CELERY_TRAIN_QUEUE = f"{queue}-train"
    with celery_worker(queue=queue, also_queues=(settings.CELERY_TRAIN_QUEUE,), lease_s=20, heartbeat_s=1):
        sft, replay, ifeval = _gated_checkpoint(people, replay_cases(2))
    final = str(sft.final_dir)

    page = sign_in("mei")
    page.goto("/releases/")
    page.click("#release-new")
    page.select_option("#in-checkpoint", final)
    page.select_option("#in-harness_version", "livestream-avatar@v1")
    page.click("#release-check")
    preview = page.locator("#gate-preview")
    expect(preview.locator('tr[data-gate="latency"] a.gate-run')).to_have_attribute("href", f"/training/runs/{replay.pk}/")
    expect(preview.locator('tr[data-gate="latency"]')).to_contain_text("worst level C=1: wall P95")
    expect(preview.locator('tr[data-gate="general capability"] a.gate-run')).to_have_attribute(
        "href", f"/training/runs/{ifeval.pk}/")
    expect(preview.locator('tr[data-gate="general capability"]')).to_contain_text("IFE-P strict")
    page.fill("#in-notes", "the tiny checkpoint, end to end")
    page.click("#release-draft")
    expect(page).to_have_url(re.compile(r"/releases/\d+/$"))
    release_url = page.url
    release = Release.objects.get()
    expect(page.locator("#release-status")).to_have_text("draft")
    expect(page.locator("#decide")).to_have_count(0)  # ML engineers draft, reviewers decide

    operator = sign_in("olivia")
    operator.goto(release_url)
    expect(operator.locator('#gates tr[data-gate="latency"]')).to_contain_text(f"replay run #{replay.pk}")
    expect(operator.locator("#decide")).to_have_count(0)
    expect(operator.locator("#release-approve")).to_have_count(0)
    assert operator.goto("/releases/new/").status == 403

    reviewer = sign_in("rafael")
    reviewer.goto(release_url)
    expect(reviewer.locator('#gates tr[data-gate="business regression"]')).to_have_attribute("data-status", "no data")
    reviewer.fill("#in-reason", "the tiny route meets the bound")
    reviewer.click("#release-approve")  # a gate blocks: refused, the gates named
    expect(reviewer.locator("#form-errors")).to_contain_text("business regression: no data")
    assert Release.objects.get().status == Release.DRAFT
    reviewer.fill("#in-reason", "the tiny route meets the bound")
    reviewer.fill("#in-override_reason", "the demo Harness v1 is what every evaluation ran; no stage to compare")
    reviewer.click("#release-approve")
    expect(reviewer.locator("#release-status")).to_have_text("approved")
    expect(reviewer.locator("#release-decision")).to_contain_text("approved by rafael")
    with reviewer.expect_download() as download:
        reviewer.click("#manifest-download")
    manifest = json.loads(Path(download.value.path()).read_text(encoding="utf-8"))
    assert manifest["release"]["id"] == release.pk and manifest["release"]["status"] == "approved"
    assert manifest["checkpoint"]["path"] == final and manifest["checkpoint"]["run_id"] == sft.pk
    fed = {g["name"]: g["run_id"] for g in manifest["gates"]}
    assert fed["latency"] == replay.pk and fed["general capability"] == ifeval.pk
