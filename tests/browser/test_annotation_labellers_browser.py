"""Labelling as the demo's annotator does it, in chromium: *Label next* opens the case two
labellers disputed, the keys 1 and c and Enter settle it with a third label, and every example
request after it (one per intent of examples/requests/) is labelled from the keyboard alone: the
category is filled from the request's intent, so Enter saves and opens the next case."""

from __future__ import annotations

import pytest

from tests.browser.shots import shot

pytestmark = [pytest.mark.browser]


def test_an_annotator_settles_the_dispute_and_labels_every_intent_by_keyboard(people, sign_in):
    from studio.accounts.roles import ANNOTATOR
    from studio.accounts.services import user_create
    from studio.annotation.demo import demo_queue_ensure
    from studio.annotation.models import AnnotationQueue
    from studio.annotation.selectors import item_status
    from tests.personas import PASSWORD

    user_create(username="lena", password=PASSWORD, roles=[ANNOTATOR])
    demo_queue_ensure(first=people["reviewer"], second=people["admin"])
    queue = AnnotationQueue.objects.get(name="demo-labels")
    total = queue.items.count()

    page = sign_in("lena")
    page.goto("/annotation/q/demo-labels/")
    assert page.locator("#items tr[data-status=disputed]").count() == 1
    page.click("#label-next")
    labelled = 0
    while "/items/" in page.url:
        n = labelled
        page.wait_for_selector("#label-form[data-keyboard=ready]")
        if n == 0:  # the disputed case comes first, with the two labels it waits on
            assert "disputed" in page.inner_text("body").lower()
        assert page.locator("#label-category").input_value() != ""
        page.keyboard.press("1")
        page.keyboard.press("c")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        labelled += 1
    assert labelled == total - 1  # all but the case the two labellers agreed on
    assert "Nothing left for you to label" in page.inner_text(".messages")
    assert page.locator("#items tr[data-status=disputed]").count() == 0
    assert page.locator("#items tr[data-status=settled]").count() == 1
    statuses = sorted(item_status(item=i) for i in queue.items.all())
    assert statuses.count("settled") == 1 and statuses.count("agreed") == 1
    shot(page, "annotation-demo-queue", full_page=False)


def test_an_admin_reads_a_calibration_per_part_and_retires_it(people, sign_in):
    from studio.annotation.testing import calibrated_judge

    row = calibrated_judge(actor=people["reviewer"])
    page = sign_in("ada")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"/annotation/calibrations/{row.pk}/")
    assert page.locator("table[data-part=dev]").count() == 1
    assert page.locator("table[data-part=heldout]").count() == 1
    interval = page.inner_text("table[data-part=heldout] tr[data-dimension=accuracy] .agreement")
    assert "[" in interval and "%]" in interval
    assert "current calibration" in page.inner_text("#current")
    shot(page, "annotation-calibration-detail")
    with page.expect_navigation():
        page.click("#retire-calibration")
    assert "no gate reads it" in page.inner_text("#retired")
    page.goto("/annotation/calibrations/")
    assert page.get_attribute(f"tr[data-calibration='{row.pk}']", "data-state") == "retired"
    standing = page.get_attribute("#eval-judge-standing", "data-status")
    assert standing == "uncalibrated"
    shot(page, "annotation-calibration-list")
