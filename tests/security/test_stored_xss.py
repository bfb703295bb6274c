"""Issue 41 item 1: a file path cannot run as script in the studio's pages.

``draft_edit.html`` put ``{{ path }}`` inside a JavaScript string in an ``onsubmit`` attribute; the
browser decodes ``&#x27;`` back into a quote, so HTML escaping did not protect it. An operator saved
``skills/aftersale/references/x'+(window.__xss=document.domain)+'.md``; an admin who pressed "Remove
this file" ran the script. Now: no inline handlers (data attributes and static/studio/studio.js), a
Content-Security-Policy that forbids inline script, and one path rule at every door. Through the
editor's and import's views; in chromium against the live server in
tests/browser/test_stored_xss_browser.py (the browser fixtures live in tests/browser/conftest.py,
and one pytest process holds one Playwright).
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from studio.harnesses.models import Draft, HarnessVersion
from studio.harnesses.services import draft_create
from tests.studio.studio_testing import client_for, token_for

HOSTILE = "skills/aftersale/references/x'+(window.__xss=document.domain)+'.md"


def _draft_holding_the_hostile_path(version, owner) -> Draft:
    """A draft that holds the hostile path, written as a draft saved before the path rule would
    be."""
    draft = draft_create(
        harness=version.harness, base_version=version, owner=owner, title="references"
    )
    files = {**draft.files, HOSTILE: "# notes\n"}
    Draft.objects.filter(pk=draft.pk).update(files=files)
    return draft


@pytest.mark.django_db
def test_every_page_carries_a_policy_without_inline_script(personas, demo_version):
    response = client_for(personas.operator).get("/")
    policy = response.headers["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'" and directives["object-src"] == "'none'"
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="x"
    )
    editor = client_for(personas.operator).get(
        f"/drafts/{draft.pk}/?path=skills/aftersale/SKILL.md"
    )
    text = editor.content.decode()
    assert editor.status_code == 200
    for handler in ("onsubmit=", "onclick=", "onchange=", "hx-on"):
        assert handler not in text


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        HOSTILE,
        "skills/aftersale/references/<img src=x onerror=alert(1)>.md",
        "skills/aftersale/references/../../../outside/x.md",
        "skills/aftersale/references/a\\b.md",
        "skills/aftersale//references/x.md",
        "skills/aftersale/references/.hidden.md",
    ],
)
def test_the_editor_refuses_a_path_outside_the_safe_characters(personas, demo_version, path):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="x"
    )
    response = client_for(personas.operator).post(
        f"/drafts/{draft.pk}/save/", {"path": path, "text": "# notes\n", "revision": draft.revision}
    )
    assert response.status_code == 400
    assert (
        "path: " in response.content.decode() and "nothing was saved" in response.content.decode()
    )
    assert path.strip("/") not in Draft.objects.get(pk=draft.pk).files


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    [
        HOSTILE,
        "skills/aftersale/references/../../../../outside/x.md",
        "skills/aftersale/references/a\\b.md",
        "skills/aftersale//references/x.md",
        "skills/aftersale/references/.hidden.md",
    ],
)
def test_the_json_import_refuses_the_same_paths(personas, demo_files, path):
    """Item 11: one path rule for every door; the zip reader already refused these."""
    files = {**demo_files, path: "# notes\n"}
    response = Client(raise_request_exception=False).post(
        "/api/v1/import/",
        json.dumps({"files": files, "message": "import"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token_for(personas.operator)}",
    )
    assert response.status_code == 400, response.content[:500]
    assert "safe bundle path" in response.content.decode()
    assert not HarnessVersion.objects.exists()
