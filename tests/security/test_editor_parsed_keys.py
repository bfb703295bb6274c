"""Issue 28 item 9: the editor validates the parsed keys of tools.yaml, not its text.

A key spelled ``"mcp\\u005fservers"`` (YAML's escape for ``mcp_servers``) naming a server the studio
has not registered showed no problem in the editor (the commit was still refused): the check looked
for the text ``mcp_servers``. Through the editor's save view and page as an operator.
"""

from __future__ import annotations

import html

import pytest

from studio.harnesses.models import Draft, HarnessVersion
from studio.harnesses.services import draft_create
from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db


def test_an_escaped_mcp_servers_key_shows_its_problem_in_the_editor(personas, demo_version):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="x"
    )
    tools = draft.files["tools.yaml"]
    assert tools.startswith("mcp_servers:\n  marketing:\n")
    escaped = (
        '"mcp\\u005fservers":\n  unknown:\n    registered: nowhere\n'
        + tools[len("mcp_servers:\n") :]
    )
    operator = client_for(personas.operator)
    saved = operator.post(
        f"/drafts/{draft.pk}/save/",
        {"path": "tools.yaml", "text": escaped, "revision": draft.revision},
        follow=True,
    )
    page = html.unescape(saved.content.decode())
    assert "validation problem" in page, page[:3000]
    editor = html.unescape(operator.get(f"/drafts/{draft.pk}/?path=tools.yaml").content.decode())
    assert (
        "line 2 · <strong>mcp_servers.unknown.registered</strong>: "
        "'nowhere' is not a registered MCP server" in editor
    )
    response = operator.post(f"/drafts/{draft.pk}/commit/", {"message": "add it"})
    assert response.status_code in (302, 400)
    assert (
        HarnessVersion.objects.count() == 1 and Draft.objects.get(pk=draft.pk).status == Draft.OPEN
    )
