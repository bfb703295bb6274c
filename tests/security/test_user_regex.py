"""Issue 41 item 3: a regex from a Harness cannot pin a core.

Hook ``matcher`` and ``patterns`` were compiled and run by Python's backtracking ``re`` in the
editor's validation and on the workers: a tool named ``'a' * 25`` with the matcher ``(a|a)*Z`` made
a draft save take 2.9 s, doubling per character. Every Harness regex now runs on RE2
(``harness/regex.py``), linear in the text; a pattern outside RE2's syntax is an editor problem
naming the hook and the field. Through the editor's save view as an operator.
"""

from __future__ import annotations

import html
import time

import pytest

from harness.hooks import HookSpec
from studio.harnesses.models import Draft
from studio.harnesses.services import draft_create
from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db

# 2.9 s at 25 characters under re, doubling per character: about 23 s at 28 (the names may be 64
# long).
LONG_NAME = "a" * 28
A_TOOL = f"""  - name: {LONG_NAME}
    description: A tool whose name the hostile matcher backtracks over.
    parameters: {{type: object, properties: {{}}, additionalProperties: false}}
    binding: {{builtin: livestream.search_faq}}
"""


def _save(client, draft, path, text):
    draft.refresh_from_db()
    return client.post(
        f"/drafts/{draft.pk}/save/",
        {"path": path, "text": text, "revision": draft.revision},
        follow=True,
    )


def test_a_catastrophic_matcher_saves_at_once_in_the_editor(personas, demo_version):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="x"
    )
    operator = client_for(personas.operator)
    tools = draft.files["tools.yaml"]
    assert (
        _save(operator, draft, "tools.yaml", tools.rstrip("\n") + "\n" + A_TOOL).status_code == 200
    )
    draft.refresh_from_db()
    assert LONG_NAME in draft.files["tools.yaml"]
    hooks = (
        draft.files["hooks.yaml"].rstrip("\n")
        + "\n"
        + (
            "  - id: slow-matcher\n    event: before_tool\n    type: tool_args_schema\n"
            "    matcher: '(a|a)*Z'\n    on_fail: {action: retry}\n"
        )
    )
    started = time.perf_counter()
    saved = _save(operator, draft, "hooks.yaml", hooks)
    elapsed = time.perf_counter() - started
    assert saved.status_code == 200
    assert elapsed < 2.0, f"the draft save took {elapsed:.1f} s"
    page = html.unescape(saved.content.decode())
    assert "matcher '(a|a)*Z' matches no declared tool" in page


def test_a_pattern_outside_re2_is_an_editor_problem_naming_the_hook_and_field(
    personas, demo_version
):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="x"
    )
    operator = client_for(personas.operator)
    hooks = draft.files["hooks.yaml"].replace(
        '- "(?i)pretend (you are|to be) (the )?(shop )?owner"', '- "(?<!not )free for everyone"'
    )
    assert hooks != draft.files["hooks.yaml"]
    _save(operator, draft, "hooks.yaml", hooks)
    editor = html.unescape(operator.get(f"/drafts/{draft.pk}/?path=hooks.yaml").content.decode())
    assert (
        "line 19 · <strong>hooks[1].params.patterns[0]</strong>: "
        "hook 'injection-guard': not a supported "
        "regular expression (invalid perl operator: (?<!); patterns use RE2 syntax"
    ) in editor, editor[:4000]
    assert "no look-around such as (?=...), (?<!...) and no backreferences" in editor
    assert operator.post(f"/drafts/{draft.pk}/commit/", {"message": "x"}).status_code in (302, 400)
    assert Draft.objects.get(pk=draft.pk).status == Draft.OPEN


def test_the_runtime_matches_in_linear_time():
    hook = HookSpec("h", "before_tool", "tool_args_schema", "(a|a)*Z", {}, "retry", "", None)
    started = time.perf_counter()
    assert not hook.matches("a" * 26)  # about 6 s under re
    assert time.perf_counter() - started < 0.5


def test_a_tool_parameter_pattern_is_matched_in_linear_time_on_the_worker():
    from types import SimpleNamespace

    from harness.runtime.hook_impls import HOOK_IMPLS, HookCheck
    from harness.tools import ToolSpec

    tool = ToolSpec(
        "lookup",
        "",
        {
            "type": "object",
            "properties": {"q": {"type": "string", "pattern": "^(a|a)*Z$"}},
            "patternProperties": {"^(b|b)*Z$": {"type": "integer"}},
        },
        None,
        "livestream.x",
    )
    check = HookCheck(
        event="before_tool",
        request=SimpleNamespace(),
        room=SimpleNamespace(),
        constraints={},
        link_ids=[],
        tool=tool,
        arguments={"q": "a" * 28, "b" * 28: 1},
    )
    hook = HookSpec("args", "before_tool", "tool_args_schema", None, {}, "retry", "", None)
    started = time.perf_counter()
    result = HOOK_IMPLS["tool_args_schema"](hook, check)
    assert time.perf_counter() - started < 0.5  # about 23 s each under re
    assert not result.ok and "does not match '^(a|a)*Z$'" in str(result)


def test_a_tool_parameter_pattern_outside_re2_is_an_editor_problem(personas, demo_version):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="x"
    )
    operator = client_for(personas.operator)
    tools = draft.files["tools.yaml"].replace(
        "query: {type: string, minLength: 1, description: Words to search for.}",
        "query: {type: string, minLength: 1, pattern: '(?<=x)y'}",
        1,
    )
    assert tools != draft.files["tools.yaml"]
    _save(operator, draft, "tools.yaml", tools)
    editor = html.unescape(operator.get(f"/drafts/{draft.pk}/?path=tools.yaml").content.decode())
    assert (
        "properties/query/pattern: not a supported regular expression (invalid perl operator: (?<=)"
        in editor
    )
