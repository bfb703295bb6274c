"""The playground in a real browser on a real worker: the steps appear while the run goes.

Before issue 15 the job page sat at 30% with no steps until the agent finished. The scripted model
here takes 3 s per call (``delay_s``; the trajectory budget is 10 s), so there is a window in which
the first tool call is on the page and the reply is not.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.services]

SLOW_SCRIPT = [
    {
        "text": '<tool_call>{"name": "get_product_info_by_link_id", '
        '"arguments": {"link_id": 3}}</tool_call>',
        "delay_s": 0.2,
    },
    {
        "text": '<tool_call>{"name": "load_skill", "arguments": {"name": "item_qa"}}</tool_call>',
        "delay_s": 3,
    },
    {"text": "Link 3 is the Sunscreen SPF50, currently 89 yuan.", "delay_s": 3},
]


def test_playground_steps_appear_before_the_run_ends(demo, sign_in, people, tmp_path):
    from studio.endpoints.services import endpoint_save
    from studio.jobs.testing import celery_worker

    script = tmp_path / "slow.json"
    script.write_text(json.dumps(SLOW_SCRIPT))
    endpoint = endpoint_save(
        endpoint=None,
        name="scripted-slow",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=people["ml_engineer"],
        script_path=str(script),
    )
    with celery_worker():
        page = sign_in("olivia")
        page.goto("/playground/?example=product_price")
        page.select_option("select[name=endpoint]", str(endpoint.pk))
        page.click("#playground-form button")
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))

        # while the model is still on its second call: the first tool call is shown, the reply is
        # not
        expect(page.locator("#trajectory-running")).to_contain_text("so far", timeout=60_000)
        expect(page.locator(".step-tool_call").first).to_contain_text(
            "get_product_info_by_link_id", timeout=10_000
        )
        assert page.locator("#job-status").get_attribute("data-status") == "running"
        expect(page.locator("#trajectory-reply")).to_have_count(0)
        assert (
            int(page.locator(".progress .bar").get_attribute("style").split(":")[1].strip(" %;"))
            > 30
        )

        expect(page.locator("#job-status")).to_have_attribute(
            "data-status", "succeeded", timeout=60_000
        )
        expect(page.locator("#trajectory-reply")).to_contain_text(
            "Link 3 is the Sunscreen SPF50, currently 89 yuan."
        )
        expect(page.locator("#trajectory-running")).to_have_count(0)
        expect(page.locator(".step-skill_load").first).to_contain_text("item_qa")
