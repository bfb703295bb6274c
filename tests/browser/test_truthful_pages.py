"""What a reviewer sees is true, in chromium: a run whose cases all fell back says so on its page
(headline warning, outcome bars), and promotion to production with "no data" gates is refused until
the reviewer writes an override reason, which the evolution's record then shows.

The evaluation jobs run inline before the browser opens the pages (the worker path has its own test
in test_evolution_stage.py).
"""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser]


@pytest.fixture
def world(people, tmp_path, inline_jobs):
    """The planted-defect Harness as v1, 12 dev cases, the shortcut and the chatter endpoints."""
    from tests.browser.worlds import planted_defect_world

    return planted_defect_world(people=people, tmp_path=tmp_path, size=12)


def test_a_run_where_every_case_fell_back_says_so_on_its_page(world, people, sign_in):
    from django.db import transaction

    from studio.evolution.models import EvalRun
    from studio.evolution.services.runs import eval_run_start

    with transaction.atomic():  # as a request does: the job starts once the run is stored
        run = eval_run_start(
            version=world["version"],
            dataset=world["dataset"],
            endpoint=world["chatter"],
            case_ids=world["case_ids"],
            actor=people["operator"],
        )
    run = EvalRun.objects.get(pk=run.pk)
    assert run.status == EvalRun.SUCCEEDED and run.summary["outcomes"]["fallback"] == 12

    page = sign_in("olivia")
    page.goto(f"/evolution/runs/{run.pk}/")
    warning = page.locator(f"#mostly-fallback-{run.pk}")
    assert warning.is_visible()
    assert "12 of 12 cases fell back to the Harness's fallback reply" in warning.inner_text()
    assert "fallback 12" in page.inner_text(f"#outcomes-{run.pk}")
    page.wait_for_selector("#run-outcome-chart[data-rendered=yes]")
    page.wait_for_selector("#run-category-chart[data-rendered=yes]")
    assert page.get_attribute("#run-outcome-chart", "data-points") == "6"
    page.goto(f"/jobs/{run.job_id}/")
    assert page.inner_text("#job-state") == "ran" and "status-succeeded" not in page.get_attribute(
        "#job-state", "class"
    )
    assert page.inner_text("#job-outcome").startswith(
        "Mostly fallback 12 of 12 cases fell back"
    )  # first (issue 38)
    assert "(12/12 scored)" in page.inner_text("#job-title")


def test_production_with_no_data_gates_is_refused_without_an_override_and_recorded_with_one(
    world, people, sign_in
):
    from studio.audit.models import AuditEvent
    from studio.evolution.models import Evolution, Proposal, Stage
    from studio.evolution.services.decisions import proposal_review
    from studio.evolution.services.diagnosis import diagnosis_start
    from studio.evolution.services.stages import candidate_build, evolution_start
    from studio.harnesses.models import Label

    evolution = evolution_start(
        name="unguarded prices",
        version=world["version"],
        dataset=world["dataset"],
        endpoint=world["shortcut"],
        actor=people["reviewer"],
    )
    stage = evolution.stages.get()
    diagnosis_start(stage=stage, actor=people["reviewer"])
    proposal_review(
        proposal=Proposal.objects.get(diagnosis__stage=stage, index=0),
        actor=people["reviewer"],
        accept=True,
    )
    candidate_build(stage=Stage.objects.get(pk=stage.pk), actor=people["reviewer"])
    stage = Stage.objects.get(pk=stage.pk)
    assert stage.comparison

    page = sign_in("rafael")
    page.goto(f"/evolution/stages/{stage.pk}/")
    page.wait_for_selector("#report-chart[data-rendered=yes]")
    # latency, capability, compatibility, and the judge calibration of the stage's judged figures
    assert "4 release gates did not pass" in page.inner_text("#gate-override-field")
    page.select_option("#decision", "promote_production")
    page.fill("input[name=reason]", "prices grounded again")
    page.click("#decide")
    page.wait_for_load_state()
    refusal = page.inner_text("body")
    assert (
        "release gates did not pass: latency: no data" in refusal
        and "general capability: no data" in refusal
    )
    assert not Label.objects.filter(
        harness=world["version"].harness, name=Label.PRODUCTION
    ).exists()

    page.select_option("#decision", "promote_production")
    page.fill("input[name=reason]", "prices grounded again")
    page.fill(
        "textarea[name=override_reason]",
        "replay and IFEval run nightly on staging; both passed last night",
    )
    page.click("#decide")
    page.wait_for_selector("#record")
    assert page.inner_text("#evolution-status") == "promoted to production"
    assert "release gates overridden" in page.inner_text("#record")
    production = Label.objects.get(harness=world["version"].harness, name=Label.PRODUCTION)
    assert production.version == stage.candidate_version
    event = AuditEvent.objects.get(action="evolution.gates.override")
    assert event.actor.username == "rafael" and "passed last night" in event.data["reason"]
    assert Evolution.objects.get(pk=evolution.pk).status == Evolution.PROMOTED
    page.goto(f"/evolution/stages/{stage.pk}/")
    assert "passed last night" in page.inner_text("#gate-override")
    assert page.locator("#decide-form").count() == 0  # decided: no more decisions
