"""Issue 51, items 3, 4, 5 and 7, walked in chromium as each role would, at 1280 px.

The evaluation and diagnosis jobs run inline (Celery eager) before the pages open; the worker path
has its own test in test_evolution_stage.py. Each test saves screenshots of the pages it changed
under ``HS_SHOTS_DIR`` when that is set (tests/browser/shots.py: looked at, not compared).
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.shots import shot

pytestmark = [pytest.mark.browser]


@pytest.fixture
def world(people, tmp_path, inline_jobs):
    """The planted-defect Harness as v1, 20 dev cases (a fifth held out), the shortcut endpoint
    (answers every case) and a chatter endpoint (every case ends in the Harness's fallback)."""
    from tests.browser.worlds import planted_defect_world

    return planted_defect_world(people=people, tmp_path=tmp_path, size=20)


def _diagnosed_stage(world, reviewer):
    from studio.evolution.models import Stage
    from studio.evolution.services.diagnosis import diagnosis_start
    from studio.evolution.services.stages import evolution_start

    evolution = evolution_start(
        name="unguarded prices",
        version=world["version"],
        dataset=world["dataset"],
        endpoint=world["shortcut"],
        actor=reviewer,
    )
    stage = evolution.stages.get()
    diagnosis_start(stage=stage, actor=reviewer)
    return Stage.objects.get(pk=stage.pk)


def _committed_stage(world, reviewer):
    from studio.evolution.models import Proposal, Stage
    from studio.evolution.services.decisions import proposal_review
    from studio.evolution.services.stages import candidate_build

    stage = _diagnosed_stage(world, reviewer)
    top = Proposal.objects.get(diagnosis__stage=stage, index=0)
    proposal_review(proposal=top, actor=reviewer, accept=True)
    candidate_build(stage=stage, actor=reviewer)
    return Stage.objects.get(pk=stage.pk)


def test_item3_after_a_roll_back_the_reviewer_evaluates_the_version_that_exists(
    world, people, sign_in
):
    from studio.evolution.models import Stage
    from studio.evolution.services.diagnosis import diagnosis_start
    from studio.promotion import stage_decide

    reviewer = people["reviewer"]
    first = _committed_stage(world, reviewer)
    assert first.comparison, "stage 1's candidate was evaluated"
    stage_decide(stage=first, decision=Stage.ROLLBACK, actor=reviewer, reason="not now")
    second = first.evolution.stages.get(number=2)
    diagnosis_start(stage=second, actor=reviewer)
    v2 = first.candidate_version

    page = sign_in("rafael")
    page.goto(f"/evolution/stages/{second.pk}/")
    page.locator("#proposal-1 button.accept").click()
    page.wait_for_selector("#proposal-1[data-status=accepted]")
    page.click("#build-candidate")
    offer = page.locator("#existing-version")
    expect(offer).to_be_visible()
    expect(offer).to_contain_text(f"v{v2.number} already holds these files")
    expect(page.locator(".messages")).to_contain_text("which already exists")
    expect(page.locator("#promote-existing")).to_have_attribute(
        "href", f"/h/{v2.harness.name}/v/{v2.number}/"
    )
    shot(page, "item3-stage-offers-existing-version")
    page.click("#use-existing")
    page.wait_for_selector("#regression-report")
    expect(page.locator(".messages")).to_contain_text("its finished evaluation run #")
    expect(page.locator("#step-candidate")).to_contain_text(f"candidate v{v2.number}")
    expect(page.locator("#decision")).to_be_visible()  # promote it from here
    shot(page, "item3-existing-version-evaluated")


def test_item3_the_operators_commit_from_the_editor_offers_the_version_that_exists(
    world, people, sign_in
):
    from studio.evolution.models import Stage
    from studio.evolution.services.diagnosis import diagnosis_start
    from studio.promotion import stage_decide

    reviewer = people["reviewer"]
    first = _committed_stage(world, reviewer)
    stage_decide(stage=first, decision=Stage.ROLLBACK, actor=reviewer, reason="not now")
    second = first.evolution.stages.get(number=2)
    diagnosis_start(stage=second, actor=reviewer)
    v2 = first.candidate_version

    olivia = sign_in("olivia")
    olivia.goto(f"/evolution/stages/{second.pk}/")
    olivia.locator("#proposal-1 button.edit").click()  # the same fix, in the editor
    olivia.wait_for_selector("#editor")
    olivia.fill("#commit-form input[name=message]", "prices grounded again")
    olivia.click("#commit-form button.primary")
    offer = olivia.locator("#existing-version")
    expect(offer).to_be_visible()
    expect(offer).to_contain_text(f"v{v2.number} already holds these files")
    expect(olivia.locator(".messages")).to_contain_text("Nothing new to commit")
    expect(olivia.locator("#evaluate-existing")).to_have_attribute(
        "href", f"/evolution/new/?version={v2.pk}"
    )
    expect(olivia.locator("#promote-existing")).to_have_attribute(
        "href", f"/h/{v2.harness.name}/v/{v2.number}/"
    )
    shot(olivia, "item3-editor-commit-offers-existing-version")
    olivia.click("#promote-existing")
    expect(olivia.locator("#label-form")).to_be_visible()  # where a label moves to it


def test_item4_the_reviewer_decides_the_one_candidate_an_operator_edited(world, people, sign_in):
    reviewer = people["reviewer"]
    stage = _diagnosed_stage(world, reviewer)
    olivia = sign_in("olivia")
    olivia.goto(f"/evolution/stages/{stage.pk}/")
    olivia.locator("#proposal-1 button.edit").click()
    olivia.wait_for_selector("#editor")
    olivia.goto(olivia.url.split("?")[0] + "?path=skills/item_qa/SKILL.md")
    text = olivia.input_value("#editor")
    olivia.fill("#editor", text + "\n- Quote the tool's price exactly. {#quote-exactly}\n")
    olivia.click("#save")
    olivia.wait_for_load_state()

    rafael = sign_in("rafael")
    rafael.goto(f"/evolution/stages/{stage.pk}/")
    expect(rafael.locator("#proposal-1 pre.udiff")).to_have_count(0)  # its diff: the candidate's
    expect(rafael.locator("#draft-diff pre.udiff")).not_to_have_count(0)
    expect(rafael.locator("#proposal-1 .edited-note")).to_contain_text("current candidate")
    candidate = rafael.locator("#draft-diff")
    expect(candidate).to_contain_text("Quote the tool's price exactly.")
    expect(candidate.locator("#build-candidate")).to_be_enabled()
    expect(candidate.locator("#reject-candidate")).to_be_visible()
    # diff lines are not double-spaced: each line is one line high
    heights = rafael.eval_on_selector_all(
        "#draft-diff pre.udiff span", "spans => spans.map(s => s.getBoundingClientRect().height)"
    )
    assert heights and max(heights) < 25, heights
    box = rafael.eval_on_selector("#draft-diff pre.udiff", "p => p.getBoundingClientRect().height")
    assert box < (len(heights) + 2) * 20, (box, len(heights))  # no blank line after each
    shot(rafael, "item4-one-candidate-with-decision")
    rafael.fill("#candidate-reject-form input[name=reason]", "the quote rule is not the fix")
    rafael.click("#reject-candidate")
    expect(rafael.locator("#proposal-1")).to_have_attribute("data-status", "rejected")
    expect(rafael.locator("#draft-diff")).to_have_count(0)
    expect(rafael.locator("#proposal-1")).to_contain_text("the quote rule is not the fix")
    shot(rafael, "item4-candidate-rejected")


@pytest.mark.services
def test_item5_the_edit_benchmark_does_not_call_fallback_runs_succeeded(world, people, sign_in):
    import time

    from studio.celery import app as celery_app
    from studio.jobs.testing import celery_worker

    stage = _committed_stage(world, people["reviewer"])
    celery_app.conf.task_always_eager = False  # the benchmark's runs go to a real worker
    page = sign_in("mei")
    url = f"/edit-benchmark/?stage={stage.pk}&a={world['chatter'].pk}&b={world['shortcut'].pk}"
    with celery_worker():
        page.goto(url)
        page.click("#start-benchmark")
        deadline = time.monotonic() + 120
        while page.locator("#benchmark-result").count() == 0:
            assert time.monotonic() < deadline, "the benchmark's runs did not finish in 120 s"
            time.sleep(0.25)  # the result is on the page once the runs end: look again soon
            page.goto(url)
    chatter = page.locator('#benchmark-runs tr[data-model="chatter"]')
    expect(chatter.locator(".status-fallback")).to_have_count(2)
    expect(chatter).not_to_contain_text("succeeded")
    expect(chatter).to_contain_text("cases fell back")
    fell = page.locator('#benchmark-result tr[data-model="chatter"] td.reduction')
    expect(fell).to_contain_text("no figure")
    expect(fell).not_to_contain_text("%")
    expect(
        page.locator('#benchmark-result tr[data-model="shortcut"] td.reduction')
    ).to_contain_text("%")
    expect(page.locator("#benchmark-difference")).to_contain_text("No difference")
    expect(page.locator("body")).not_to_contain_text("The report: 18.1%")
    shot(page, "item5-edit-benchmark-fallback")


def test_item7_the_top_bar_fits_at_1280_px_for_every_role(people, sign_in):
    for username in ("ada", "olivia", "rafael", "mei"):
        page = sign_in(username)
        page.set_viewport_size({"width": 1280, "height": 800})
        page.goto("/")
        for link in ("API tokens", "Sign out"):
            box = page.locator(".who").get_by_text(link).bounding_box()
            assert box and box["x"] + box["width"] <= 1280, (username, link, box)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 1280, (username, width)
        nav = page.locator(".mainnav")
        expect(nav.get_by_role("link", name="Annotation")).to_be_visible()
        expect(nav.get_by_role("link", name="Labels", exact=True)).to_have_count(0)
        if username == "ada":
            shot(page, "item7-topbar-admin")


def test_item7_a_403_says_who_may_in_words(people, sign_in):
    page = sign_in("olivia")
    page.goto("/training/new/sft/")
    body = page.locator("main")
    expect(body).to_contain_text("This page is for an ML engineer or an admin")
    expect(body).to_contain_text("your account is an operator")
    expect(body).not_to_contain_text("training.run")
    expect(body).not_to_contain_text("ml_engineer")
    shot(page, "item7-403")


def test_item7_roll_back_only_where_a_label_has_an_earlier_version(people, demo, sign_in):
    from studio.harnesses.services import label_move

    label_move(
        harness=demo.harness, name="canary", version=demo, actor=people["operator"], reason="first"
    )
    page = sign_in("olivia")
    page.goto(f"/h/{demo.harness.name}/")
    row = page.locator("#labels tr", has_text="canary")
    expect(row.get_by_role("button", name="Roll back")).to_have_count(0)
    expect(row).to_contain_text("no earlier version")
    shot(page, "item7-labels-no-rollback")


def test_item7_release_page_keeps_its_width_and_names_what_fed_each_gate(
    people, demo, sign_in, settings, tmp_path
):
    from studio.releases.services import release_draft
    from studio.releases.testing import ifeval_run, replay_run, trained_checkpoint

    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    sft = trained_checkpoint(tmp_path / "runs" / "run-sft")
    replay = replay_run(
        tmp_path / "runs" / "run-replay",
        checkpoint=sft.final_dir,
        walls={1: [1.2, 1.4]},
        harness_version=demo,
    )
    ifeval = ifeval_run(tmp_path / "runs" / "run-ifeval", model=sft.final_dir, prompt_strict=40.0)
    release = release_draft(
        checkpoint=str(sft.final_dir),
        draft_head="",
        harness_version=f"{demo.harness.name}@v{demo.number}",
        notes="width",
        actor=people["ml_engineer"],
    )
    page = sign_in("mei")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(f"/releases/{release.pk}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    manifest = page.locator("#manifest").bounding_box()
    assert manifest and manifest["x"] + manifest["width"] <= 1280, manifest
    expect(page.locator('tr[data-gate="latency"] a.gate-run')).to_have_text(f"replay #{replay.pk}")
    expect(page.locator('tr[data-gate="general capability"] a.gate-run')).to_have_text(
        f"checkpoint evaluation #{ifeval.pk}"
    )
    expect(page.locator("#gates")).not_to_contain_text("training run #")
    shot(page, "item7-release")

    page.goto(f"/training/runs/{replay.pk}/")
    table = page.locator("#replay-summary")
    expect(table).to_be_visible()
    assert table.evaluate("t => t.tagName") == "TABLE"  # not Markdown in a <pre>
    expect(page.locator("#run-summary")).not_to_contain_text("|---")
    shot(page, "item7-replay-run-result")


def test_item7_training_data_and_calibration_figures_read_as_tables(
    people, world, sign_in, tmp_path
):
    from studio.annotation.models import JudgeCalibration
    from studio.releases.testing import trained_checkpoint

    sft = trained_checkpoint(tmp_path / "runs" / "run-sft")
    sft.summary = {
        "model_card": {
            "stage": "sft",
            "trainer": "SFTTrainer",
            "base_model": "tiny",
            "parent_checkpoint": "tiny",
            "harness_name": "livestream-avatar",
            "harness_digest": "0" * 64,
            "steps": 1,
            "wall_time_s": 3.0,
            "data": {"n_examples": 12, "hsa_variants": 0, "rejected": {"judge": 2, "format": 1}},
        }
    }
    sft.save(update_fields=["summary"])
    page = sign_in("mei")
    page.goto(f"/training/runs/{sft.pk}/")
    data = page.locator("#card-data")
    expect(data).to_contain_text("n_examples")
    expect(data).not_to_contain_text("{")
    shot(page, "item7-training-data")

    calibration = JudgeCalibration.objects.create(
        judge="programmatic",
        dataset=world["dataset"],
        n=10,
        accuracy_agreement=0.9,
        accuracy_kappa=0.8,
        effectiveness_agreement=0.8,
        effectiveness_kappa=0.6,
        report={
            "accuracy": {"labels": [0, 1], "confusion": [[4, 1], [0, 5]], "disagreements": []},
            "effectiveness": {
                "labels": [0, 0.5, 1],
                "confusion": [[3, 1, 0], [0, 2, 1], [0, 0, 3]],
                "disagreements": [],
            },
        },
    )
    page.goto(f"/annotation/calibrations/{calibration.pk}/")
    matrix = page.locator('table.confusion[data-confusion="effectiveness"]')
    expect(matrix.locator("thead th")).to_have_count(4)
    expect(matrix.locator("tbody tr")).to_have_count(3)
    expect(page.locator("main")).not_to_contain_text("[[")
    shot(page, "item7-calibration")
    page.goto("/edit-benchmark/")
    expect(page.locator("main")).not_to_contain_text("The report:")
