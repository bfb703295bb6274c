"""Issue 41 item 1 in chromium: a file path cannot run as script, and no studio page breaks the
policy.

The editor put ``{{ path }}`` inside a JavaScript string in an ``onsubmit`` attribute; an admin who
pressed "Remove this file" on ``skills/aftersale/references/x'+(window.__xss=document.domain)+'.md``
ran the script. Against the live server, as tests/browser/ drives it (the path rule, the policy
header and the import door: tests/security/test_stored_xss.py).
"""

from __future__ import annotations

import pytest

from tests.security.test_stored_xss import HOSTILE, _draft_holding_the_hostile_path

pytestmark = pytest.mark.browser


def test_removing_a_file_with_a_hostile_name_runs_no_script(people, demo, sign_in, live_server):
    draft = _draft_holding_the_hostile_path(demo, people["operator"])
    page = sign_in("ada")
    violations = []
    page.on(
        "console",
        lambda message: (
            violations.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    dialogs = []

    def accept(dialog):
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", accept)
    response = page.goto(f"/drafts/{draft.pk}/?path={HOSTILE.replace('+', '%2B')}")
    csp = response.headers.get("content-security-policy", "")
    assert (
        "script-src 'self'" in csp
        and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    )
    page.click("text=Remove this file")
    page.wait_for_load_state()
    assert page.evaluate("window.__xss") is None
    assert dialogs == [f"Remove {HOSTILE} from the draft?"]  # the question shows the path as text
    draft.refresh_from_db()
    assert HOSTILE not in draft.files  # and the confirmed removal went through
    assert not violations, violations  # the studio's own pages need no inline script


def test_the_studios_pages_run_under_the_policy_without_a_violation(people, demo, sign_in):
    page = sign_in("ada")
    violations = []
    page.on(
        "console",
        lambda message: (
            violations.append(f"{page.url}: {message.text}")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    for url in [
        "/",
        "/endpoints/",
        "/endpoints/secrets/",
        "/jobs/",
        "/playground/",
        "/audit/",
        "/evolution/",
        "/training/",
        "/replay/",
        "/releases/",
        "/compatibility/",
        "/traffic/",
        "/annotation/",
        "/mcp-servers/",
        "/edit-benchmark/",
        f"/h/{demo.harness.name}/",
        f"/h/{demo.harness.name}/v/1/",
        "/import/",
        "/drafts/",
    ]:
        response = page.goto(url)
        assert response.status < 400, url
        page.wait_for_load_state("networkidle")
    assert not violations, violations
