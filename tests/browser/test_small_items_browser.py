"""Issue 38, item 10 in chromium: the sign-in form keeps the username after a wrong password and
says what the studio is; no page asks for a favicon that is not there; the label and skill-name
fields' patterns compile under Chromium's `v`-flag regular expressions, so the browser checks them
before the form is sent."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser]


def test_sign_in_favicon_and_field_patterns(people, demo, browser, live_server):
    from studio.harnesses.services import draft_create
    from tests.personas import PASSWORD

    draft = draft_create(
        harness=demo.harness, base_version=demo, owner=people["operator"], title="patterns"
    )
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    console, missing = [], []
    page.on("console", lambda message: console.append(message.text))
    page.on(
        "response",
        lambda response: missing.append(response.url) if response.status == 404 else None,
    )
    try:
        page.goto("/accounts/login/")
        assert "live-commerce avatar agent" in page.inner_text("#product")
        page.fill("input[name=username]", "olivia")
        page.fill("input[name=password]", "not her password")
        page.click("button[type=submit]")
        page.wait_for_selector("text=did not match")
        assert (
            page.input_value("input[name=username]") == "olivia"
        )  # kept: only the password is typed again
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()

        page.goto(f"/h/{demo.harness.name}/v/{demo.number}/")
        label = page.locator("input[name=label]")
        label.fill("Canary EU!")
        assert label.evaluate("field => field.validity.patternMismatch") is True
        label.fill("canary-eu")
        assert label.evaluate("field => field.validity.valid") is True

        page.goto(f"/drafts/{draft.pk}/")
        page.click("details.addskill summary")
        name = page.locator("details.addskill input[name=name]")
        name.fill("size advice")
        assert name.evaluate("field => field.validity.patternMismatch") is True
        name.fill("size_advice-2")
        assert name.evaluate("field => field.validity.valid") is True
        page.wait_for_timeout(300)
    finally:
        context.close()
    assert not [text for text in console if "pattern" in text.lower()], console
    assert not [url for url in missing if "favicon" in url], missing
