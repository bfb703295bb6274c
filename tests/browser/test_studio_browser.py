"""The studio in a real browser: edit, validate, commit, diff, conflict, promote, refuse."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser
SKILL = "skills/item_qa/SKILL.md"
NEW_RULE = "- Never promise a delivery date that no tool returned. {#no-delivery-promises}"


def open_new_draft(page, version_number: int = 1):
    page.goto(f"/h/livestream-avatar/v/{version_number}/")
    page.click("text=Edit as draft")
    expect(page).to_have_url(re.compile(r"/drafts/\d+/$"))
    return int(re.search(r"/drafts/(\d+)/", page.url).group(1))


def test_operator_edits_a_rule_sees_the_error_at_its_line_fixes_commits_and_sees_the_diff(
    demo, sign_in
):
    page = sign_in("olivia")
    draft_id = open_new_draft(page)
    page.goto(f"/drafts/{draft_id}/?path={SKILL}")
    original = page.input_value("#editor")
    broken = original.replace("kind: reply", "kind: [reply", 1)
    bad_line = broken.split("\n").index("kind: [reply") + 1
    page.fill("#editor", broken)
    page.click("#save")
    problem = page.locator(".inline-problem").first
    expect(problem).to_be_visible()
    reported = int(problem.get_attribute("data-line"))
    assert abs(reported - bad_line) <= 1, (reported, bad_line)
    expect(page.locator(f"#L{reported}")).to_have_class(re.compile("has-problem"))
    expect(page.locator(".gutter .bad")).to_have_count(1)
    expect(page.locator("#commit-form button")).to_be_disabled()

    fixed = original.rstrip("\n") + "\n" + NEW_RULE + "\n"
    page.fill("#editor", fixed)
    page.click("#save")
    expect(page.locator("#draft-valid")).to_be_visible()
    expect(page.locator(".inline-problem")).to_have_count(0)
    page.fill("#commit-form input[name=message]", "No delivery promises")
    page.click("#commit-form button")
    expect(page).to_have_url(re.compile(r"/h/livestream-avatar/diff/\?a=1&b=2"))
    expect(page.locator("pre.udiff .add", has_text="Never promise a delivery date")).to_be_visible()
    expect(page.locator("#change-summary")).to_contain_text("item_qa")
    page.click("text=side by side")
    expect(
        page.locator("table.sbs tr.insert td.r", has_text="Never promise a delivery date")
    ).to_be_visible()


def test_two_browsers_save_the_same_draft_and_the_second_gets_the_conflict_page(demo, sign_in):
    first = sign_in("olivia")
    draft_id = open_new_draft(first)
    second = sign_in("olivia")
    for page in (first, second):
        page.goto(f"/drafts/{draft_id}/?path={SKILL}")
    text = first.input_value("#editor")
    first.fill("#editor", text + "- First browser: mention the size chart.\n")
    first.click("#save")
    expect(first.locator("#draft-revision")).to_have_text("2")
    second.fill("#editor", text + "- Second browser: never quote shipping times.\n")
    second.click("#save")
    expect(second).to_have_url(re.compile(r"/conflicts/\d+/$"))
    expect(second.locator("#their-text")).to_contain_text("First browser: mention the size chart.")
    expect(second.locator("#my-text")).to_contain_text(
        "Second browser: never quote shipping times."
    )
    expect(second.locator("table.sbs")).to_be_visible()
    second.click("#keep-mine")
    expect(second.locator("#draft-revision")).to_have_text("3")
    assert "Second browser: never quote shipping times." in second.input_value("#editor")


def test_a_reviewer_promotes_a_version_to_production_with_a_reason(demo, sign_in):
    page = sign_in("rafael")
    page.goto("/h/livestream-avatar/v/1/")
    page.fill("#label-form input[name=label]", "production")
    page.fill("#label-form input[name=reason]", "Regression suite green")
    page.click("#label-form button")
    # v1 was never evaluated in a stage and nothing was replayed: the gates have no data
    expect(page.locator(".msg-error")).to_contain_text("release gates did not pass")
    page.fill("#label-form input[name=label]", "production")
    page.fill("#label-form input[name=reason]", "Regression suite green")
    page.fill("#label-form input[name=override_reason]", "first release; gates measured next")
    page.click("#label-form button")
    expect(page.locator(".msg-success")).to_contain_text("production now points at v1")
    expect(page.locator("#release-gates")).to_contain_text("first release; gates measured next")
    page.goto("/h/livestream-avatar/history/")
    row = page.locator("#label-history tbody tr").first
    expect(row).to_contain_text("promote")
    expect(row).to_contain_text("rafael")
    expect(row).to_contain_text("Regression suite green")


def test_an_operator_cannot_promote_and_an_outsider_is_refused(demo, sign_in):
    operator = sign_in("olivia")
    operator.goto("/h/livestream-avatar/v/1/")
    expect(operator.locator("#label-names option[value=production]")).to_have_count(0)
    operator.fill("#label-form input[name=label]", "production")
    operator.click("#label-form button")
    expect(operator.locator(".msg-error")).to_contain_text("reviewer")
    outsider = sign_in("oscar")
    response = outsider.goto("/h/livestream-avatar/")
    assert response.status == 403
    expect(outsider.locator("h1")).to_have_text("Not allowed")
    expect(outsider.locator(".mainnav a")).to_have_count(0)


@pytest.mark.services
def test_playground_run_on_a_real_worker_updates_the_job_page_until_the_trajectory_shows(
    demo, sign_in, people
):
    from studio.endpoints.services import endpoint_save
    from studio.jobs.testing import celery_worker

    script = Path(__file__).parents[1] / "studio" / "testdata" / "price.script.json"
    endpoint_save(
        endpoint=None,
        name="scripted-price",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=people["ml_engineer"],
        script_path=str(script),
    )
    with celery_worker():
        page = sign_in("olivia")
        page.goto("/playground/")
        page.fill("input[name=comment]", "How much is product #3?")
        page.click("#playground-form button")
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator("#job-status")).to_have_attribute(
            "data-status", "succeeded", timeout=120000
        )
        expect(page.locator("#trajectory-reply")).to_contain_text(
            "Link 3 is the Sunscreen SPF50, currently 89 yuan."
        )
        expect(page.locator(".step-tool_call").first).to_contain_text("get_product_info_by_link_id")
        expect(page.locator(".step-hook_decision").first).to_be_visible()


def test_a_refused_front_matter_shows_in_the_preview_with_its_reason(demo, sign_in):
    """The preview answers a YAML bomb with a 400; the editor still swaps it in, so the reason
    shows."""
    page = sign_in("olivia")
    draft_id = open_new_draft(page)
    page.goto(f"/drafts/{draft_id}/?path={SKILL}")
    original = page.input_value("#editor")
    bomb = "laughs: {a: &a [lol, lol], b: &b [*a, *a], c: [*b, *b]}\n"
    with page.expect_response(lambda r: r.url.endswith("/preview/") and r.status == 400):
        page.fill("#editor", original.replace("kind: reply\n", "kind: reply\n" + bomb, 1))
    expect(page.locator("#preview-refused")).to_contain_text("anchors and aliases")
    with page.expect_response(lambda r: r.url.endswith("/preview/") and r.status == 200):
        page.fill("#editor", original)
    expect(page.locator("#preview-refused")).to_have_count(0)
    expect(page.locator("#skill-preview dt", has_text="kind")).to_be_visible()
