"""Issue 51, item 1: a playground run is answered while a compatibility fill is running.

In the demo a playground request once waited 9 min 11 s behind the compatibility cells a label move
had queued: every job went to the one queue its one worker read. Now what people start goes to the
studio's queue and what the studio queues by itself to the follow-on queue, each read by a worker
of its own, as ``scripts/demo.sh`` starts them (``studio.jobs.registry.job_queue``). Here two real
workers (solo pools: one job at a time each) and a slow scripted model (3 s per model call) that
serves production: the reviewer's label move fills the production pair's cell (6 cases and their
variants, about 36 s of model calls), and while that cell is being scored the operator's playground
run, on a fast model, is answered within seconds. The reviewer, whose move caused the cell, then
cancels it from the matrix, and the cell reads "cancelled".
"""

from __future__ import annotations

import json
import re
import time
import uuid

import pytest
from playwright.sync_api import expect

from tests.browser.shots import shot

pytestmark = [pytest.mark.browser, pytest.mark.services]

CELL_CASES = 6
# the playground's model: answers the product_price example at once
PRODUCT_PRICE = [
    '<tool_call>{"name": "get_product_info_by_link_id", "arguments": {"link_id": 3}}</tool_call>',
    '<tool_call>{"name": "load_skill", "arguments": {"name": "item_qa"}}</tool_call>',
    "Link 3 is the Sunscreen SPF50, currently 89 yuan.",
]


def test_a_playground_run_is_answered_while_a_compatibility_fill_is_running(
    demo, people, sign_in, settings, tmp_path
):
    from studio.compatibility.models import Cell, LabelServer
    from studio.compatibility.testing import source_dataset
    from studio.endpoints.services import endpoint_save
    from studio.harnesses.services import label_move
    from studio.jobs.models import Job
    from studio.jobs.testing import celery_worker, wait_for

    settings.COMPATIBILITY_CASES = CELL_CASES
    source_dataset(30)
    slow, fast = tmp_path / "slow.json", tmp_path / "fast.json"
    slow.write_text(json.dumps([{"text": "Thanks for the comment!", "delay_s": 3}]))
    fast.write_text(json.dumps(PRODUCT_PRICE))
    served, playground = (
        endpoint_save(
            endpoint=None,
            name=name,
            route="scripted",
            base_url="",
            model="",
            description="",
            actor=people["ml_engineer"],
            script_path=str(script),
        )
        for name, script in (("slow-served", slow), ("fast-playground", fast))
    )
    LabelServer.objects.create(harness=demo.harness, label="production", endpoint=served)

    follow_on = f"test-fo-{uuid.uuid4().hex[:8]}"
    env = {"COMPATIBILITY_CASES": str(CELL_CASES)}
    with (
        celery_worker(queue=follow_on, route_here=False, extra_env=env),
        celery_worker(follow_on_queue=follow_on, extra_env=env),
    ):
        label_move(
            harness=demo.harness,
            name="production",
            version=demo,
            actor=people["reviewer"],
            reason="live",
        )
        cell = wait_for(
            lambda: Cell.objects.select_related("run__job").filter(run__job__isnull=False).first(),
            timeout=60,
            what="the label move's cell",
        )
        cell_job = cell.run.job_id
        wait_for(
            lambda: Job.objects.filter(pk=cell_job, status=Job.RUNNING).exists(),
            timeout=60,
            what="a worker scoring the cell",
        )
        time.sleep(2)  # its first cases are being scored

        page = sign_in("olivia")
        page.goto("/playground/?example=product_price")
        page.select_option("select[name=endpoint]", str(playground.pk))
        clicked = time.monotonic()
        page.click("#playground-form button")
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator("#trajectory-reply")).to_contain_text(
            "Link 3 is the Sunscreen SPF50, currently 89 yuan.", timeout=20_000
        )
        answered_s = time.monotonic() - clicked
        # the cell was still being scored when the playground run was answered
        assert Job.objects.get(pk=cell_job).status == Job.RUNNING, answered_s
        assert Job.objects.get(pk=cell_job).automatic
        cell.run.refresh_from_db()
        assert cell.run.results.count() < len(cell.run.case_ids)
        print(f"playground answered in {answered_s:.1f} s while the cell was being scored")

        # the reviewer's label move caused the cell: he sees Cancel on it (the operator does not),
        # and the cancelled cell says so
        page.goto(f"/compatibility/?harness={demo.harness.name}")
        shown = page.locator('tr[data-endpoint="slow-served"] td[data-version="1"]')
        expect(shown).to_contain_text("queued on behalf of rafael")
        expect(shown.locator("button", has_text="Cancel")).to_have_count(0)
        reviewer = sign_in("rafael")
        reviewer.on("dialog", lambda dialog: dialog.accept())
        reviewer.goto(f"/compatibility/?harness={demo.harness.name}")
        mine = reviewer.locator('tr[data-endpoint="slow-served"] td[data-version="1"]')
        shot(reviewer, "matrix-follow-on-cancel")
        mine.locator("button", has_text="Cancel").click()
        expect(reviewer).to_have_url(re.compile(rf"/jobs/{cell_job}/$"))
        reviewer.goto(f"/compatibility/?harness={demo.harness.name}")
        expect(mine).to_have_attribute("data-status", "cancelled", timeout=30_000)
        expect(mine).to_contain_text("cancelled")
        expect(mine).not_to_contain_text("failed")
        shot(reviewer, "matrix-cancelled")
