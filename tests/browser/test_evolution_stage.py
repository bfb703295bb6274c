"""One full evolution stage from the browser, against a real Celery worker and the shortcut policy.

A reviewer starts an evolution on a Harness with a planted defect (prices may be
stated without a tool), watches the base evaluation finish, runs the diagnosis,
accepts the top proposal, commits the candidate, watches it evaluate, reads the
regression report, promotes the candidate to staging and sees the record chart.
"""

from __future__ import annotations

import json
import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.services]


@pytest.fixture
def evolution_world(people, tmp_path):
    from evaluation.diagnosis.planted import without_price_grounding
    from harness import demo_harness_dir, read_dir
    from studio.endpoints.models import ModelEndpoint
    from studio.evolution.scripted import write_script
    from studio.evolution.services.datasets import dataset_import
    from studio.harnesses.services import harness_import
    from studio.traffic.testing import world_cases

    cases, catalogue = world_cases(20, seed=7)
    dataset = dataset_import(
        name="dev-20",
        text="\n".join(json.dumps(c) for c in cases),
        source="dev.jsonl",
        actor=people["operator"],
        catalogue=catalogue.to_dict(),
    )
    files, _ = read_dir(demo_harness_dir())
    files = without_price_grounding(files)
    version = harness_import(
        files=files, author=people["operator"], message="prices unguarded"
    ).version
    endpoint = ModelEndpoint.objects.create(
        name="shortcut",
        route=ModelEndpoint.SCRIPTED,
        script_path=str(write_script(cases=cases, path=tmp_path / "script.json")),
    )
    return version, dataset, endpoint


def test_one_stage_from_evaluation_to_staging(evolution_world, sign_in):
    from studio.harnesses.models import Label
    from studio.jobs.testing import celery_worker

    version, dataset, endpoint = evolution_world
    with celery_worker():
        page = sign_in("rafael")
        page.click("text=Evolution")
        page.click("#new-evolution")
        page.fill("input[name=name]", "unguarded prices")
        page.select_option("select[name=version]", str(version.pk))
        page.select_option("select[name=dataset]", dataset.name)
        page.select_option("select[name=endpoint]", str(endpoint.pk))
        page.click("#start-evolution")

        page.wait_for_selector("#step-evaluate .run-status[data-status=succeeded]", timeout=90_000)
        assert "Accuracy" in page.inner_text("#step-evaluate")
        page.click("#diagnose")
        page.wait_for_selector("#proposal-1", timeout=60_000)
        first = page.locator("#proposal-1")
        assert "by rule-based" in first.inner_text()
        assert "require_tool_before_claim" in first.inner_text()
        first.locator("button.accept").click()
        page.wait_for_selector("#proposal-1[data-status=accepted]")
        page.click("#build-candidate")

        page.wait_for_selector("#regression-report", timeout=90_000)
        report = page.inner_text("#regression-report")
        assert "product_qa" in report and "Newly passing" in report
        assert page.locator("#report-overall tr[data-scope=product_qa]").count() == 1
        page.select_option("#decision", "promote_staging")
        page.fill("input[name=reason]", "prices grounded again")
        page.click("#decide")

        page.wait_for_selector("#record")
        page.wait_for_selector("#record-chart[data-rendered=yes]")
        assert page.get_attribute("#record-chart", "data-points") == "2"
        record = page.inner_text("#record")
        assert "promote to staging" in record
    staging = Label.objects.get(harness=version.harness, name="staging")
    assert staging.version.parent_id == version.pk


def test_an_operator_edits_a_proposal_and_the_reviewer_commits_it_and_decides(
    evolution_world, people, sign_in
):
    """Issue 38, item 4: olivia (operator) presses "Edit in the editor" and saves; rafael (reviewer)
    sees the edited diff on the stage page, commits that draft as the candidate and decides, on a
    real worker."""
    from studio.evolution.models import Diagnosis, EvalRun
    from studio.evolution.services.diagnosis import diagnosis_start
    from studio.evolution.services.stages import evolution_start
    from studio.harnesses.models import Label
    from studio.jobs.testing import celery_worker

    def until(check, what: str, timeout_s: float = 90.0):
        deadline = time.monotonic() + timeout_s
        while not check():
            assert time.monotonic() < deadline, f"{what} did not happen in {timeout_s:.0f} s"
            time.sleep(0.3)

    version, dataset, endpoint = evolution_world
    with celery_worker():
        evolution = evolution_start(
            name="edited by hand",
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            actor=people["reviewer"],
        )
        stage = evolution.stages.get()
        until(
            lambda: EvalRun.objects.get(pk=stage.parent_run_id).status == EvalRun.SUCCEEDED,
            "the base evaluation",
        )
        diagnosis = diagnosis_start(stage=stage, actor=people["reviewer"])
        until(lambda: Diagnosis.objects.get(pk=diagnosis.pk).status == "succeeded", "the diagnosis")
        olivia = sign_in("olivia")
        olivia.goto(f"/evolution/stages/{stage.pk}/")
        olivia.wait_for_selector("#proposal-1")
        assert (
            olivia.locator("#proposal-1 button.accept").count() == 0
        )  # accepting is the reviewer's
        olivia.locator("#proposal-1 button.edit").click()
        olivia.wait_for_selector("#editor")
        olivia.goto(olivia.url.split("?")[0] + "?path=skills/item_qa/SKILL.md")
        text = olivia.input_value("#editor")
        olivia.fill("#editor", text + "\n- Quote the tool's price exactly. {#quote-exactly}\n")
        olivia.click("#save")
        olivia.wait_for_load_state()
        olivia.goto(f"/evolution/stages/{stage.pk}/")
        assert "A reviewer commits the candidate" in olivia.inner_text("#candidate-by-reviewer")

        rafael = sign_in("rafael")
        rafael.goto(f"/evolution/stages/{stage.pk}/")
        edited = rafael.inner_text("#draft-diff")
        assert "edited by olivia" in edited and "Quote the tool's price exactly." in edited
        rafael.click("#build-candidate")
        rafael.wait_for_selector("#regression-report", timeout=90_000)
        rafael.select_option("#decision", "promote_staging")
        rafael.fill("input[name=reason]", "prices grounded, quoted exactly")
        rafael.click("#decide")
        rafael.wait_for_selector("#record")
        assert "promote to staging" in rafael.inner_text("#record")
    staging = Label.objects.get(harness=version.harness, name="staging")
    assert staging.version.parent_id == version.pk and staging.version.author == people["reviewer"]
