"""A release in a real browser: the ML engineer checks the gates and drafts the release; an operator
reads it but has no way to decide; the reviewer is refused without an override while a gate blocks,
approves with one, and downloads the manifest that names the runs.

The runs that feed the gates are rows whose folders hold what the real commands write
(``studio.releases.testing``: the tiny model as a finished SFT run's checkpoint, a replay record
written by ``serving.record``, an evaluation summary as ``training.self_eval`` writes it), so the
gates read them exactly as they read runs a worker ran. The same path with every run made by a real
worker from the browser is tests/browser/test_training_browser.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser]


def test_a_reviewer_approves_a_release_fed_by_a_tiny_replay_and_an_ifeval_run(
    people, demo, sign_in, settings, tmp_path
):
    from studio.releases.models import Release
    from studio.releases.testing import ifeval_run, replay_run, trained_checkpoint

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    sft = trained_checkpoint(tmp_path / "runs" / "run-sft")
    final = str(sft.final_dir)
    replay = replay_run(
        tmp_path / "runs" / "run-replay",
        checkpoint=sft.final_dir,
        walls={1: [1.2, 1.4]},
        harness_version=demo,
    )
    ifeval = ifeval_run(tmp_path / "runs" / "run-ifeval", model=sft.final_dir, prompt_strict=40.0)

    page = sign_in("mei")
    page.goto("/releases/")
    page.click("#release-new")
    page.select_option("#in-checkpoint", final)
    page.select_option("#in-harness_version", "livestream-avatar@v1")
    page.click("#release-check")
    preview = page.locator("#gate-preview")
    expect(preview.locator('tr[data-gate="latency"] a.gate-run')).to_have_attribute(
        "href", f"/training/runs/{replay.pk}/"
    )
    expect(preview.locator('tr[data-gate="latency"]')).to_contain_text("worst level C=1: wall P95")
    expect(preview.locator('tr[data-gate="general capability"] a.gate-run')).to_have_attribute(
        "href", f"/training/runs/{ifeval.pk}/"
    )
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
    expect(operator.locator('#gates tr[data-gate="latency"]')).to_contain_text(
        f"replay run #{replay.pk}"
    )
    expect(operator.locator("#decide")).to_have_count(0)
    expect(operator.locator("#release-approve")).to_have_count(0)
    assert operator.goto("/releases/new/").status == 403

    reviewer = sign_in("rafael")
    reviewer.goto(release_url)
    # v1 has no parent and nothing is in production yet: nothing it could regress against
    expect(reviewer.locator('#gates tr[data-gate="business regression"]')).to_have_attribute(
        "data-status", "pass"
    )
    reviewer.fill("#in-reason", "the tiny route meets the bound")
    reviewer.click("#release-approve")  # a gate blocks: refused, the gates named
    expect(reviewer.locator("#form-errors")).to_contain_text(
        "Approving a release needs every gate to pass"
    )
    assert Release.objects.get().status == Release.DRAFT
    reviewer.fill("#in-reason", "the tiny route meets the bound")
    reviewer.fill(
        "#in-override_reason",
        "the demo Harness v1 is what every evaluation ran; no stage to compare",
    )
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
