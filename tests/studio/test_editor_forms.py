"""The editor's "add a skill" and "add a hook" forms write Harness text through
harness.text_edit."""

import difflib

import pytest
from studio_testing import client_for

from harness.hooks import parse_hooks
from studio.harnesses.services import draft_create, draft_file_save

pytestmark = pytest.mark.django_db

# the demo's hooks.yaml with its retry policy moved below the hooks list, comments around it
RETRY = """retry:
  max_retries: 2
  on_exhausted: fallback
  fallback_reply: Thanks for asking! Let me double-check that for you, one moment.
"""


@pytest.fixture
def draft(personas, demo_version):
    return draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="t"
    )


def only_added(before: str, after: str) -> list[str]:
    ops = [
        op
        for op in difflib.SequenceMatcher(
            a=before.split("\n"), b=after.split("\n"), autojunk=False
        ).get_opcodes()
        if op[0] != "equal"
    ]
    assert len(ops) == 1 and ops[0][0] == "insert", ops
    return after.split("\n")[ops[0][3] : ops[0][4]]


@pytest.mark.parametrize("name", ["café", "Size", "size advice", "٣"])
def test_add_skill_refuses_a_name_the_harness_format_refuses(personas, draft, name):
    page = (
        client_for(personas.operator)
        .post(
            f"/drafts/{draft.pk}/skills/add/",
            {"name": name, "kind": "reply", "description": "Sizes.", "revision": draft.revision},
            follow=True,
        )
        .content.decode()
    )
    assert f"name: {name!r} is not a skill name: use 1-64 characters of a-z" in page.replace(
        "&#x27;", "'"
    )
    draft.refresh_from_db()
    assert draft.revision == 1 and not any(p.startswith(f"skills/{name}/") for p in draft.files)


def test_add_skill_keeps_a_description_with_yaml_punctuation_valid(personas, draft):
    client_for(personas.operator).post(
        f"/drafts/{draft.pk}/skills/add/",
        {
            "name": "size_advice",
            "kind": "strategy",
            "description": "Sizes: from the chart #1",
            "revision": 1,
        },
    )
    draft.refresh_from_db()
    assert "skills/size_advice/SKILL.md" in draft.files and draft.problems == []
    assert "description: 'Sizes: from the chart #1'" in draft.files["skills/size_advice/SKILL.md"]


def test_add_hook_works_when_hooks_is_not_the_last_key_and_keeps_the_rest(personas, draft):
    hooks_first = (
        draft.files["hooks.yaml"].replace(RETRY, "")
        + "\n# the retry policy, after the hooks\n"
        + RETRY
    )
    draft_file_save(
        draft=draft, path="hooks.yaml", text=hooks_first, base_revision=1, actor=personas.operator
    )
    draft.refresh_from_db()
    assert draft.problems == []
    form = {
        "id": "short-replies",
        "type": "max_length",
        "event": "stop",
        "matcher": "",
        "params": "{max_chars: 120}",
        "action": "retry",
        "message": "Say it in under 120 characters.",
        "revision": draft.revision,
    }
    page = (
        client_for(personas.operator)
        .post(f"/drafts/{draft.pk}/hooks/add/", form, follow=True)
        .content.decode()
    )
    assert "Added hook short-replies" in page
    draft.refresh_from_db()
    added = only_added(hooks_first, draft.files["hooks.yaml"])
    assert added[0] == "  - id: short-replies" and "      max_chars: 120" in added
    assert draft.problems == []
    hooks, _ = parse_hooks(draft.files["hooks.yaml"])
    assert hooks.hooks[-1].id == "short-replies" and hooks.hooks[-1].params == {"max_chars": 120}


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("id", "Bad Id", "id: 'Bad Id' is not an id; use 1-64 lower-case letters"),
        ("id", "café", "id: 'café' is not an id"),
        ("event", "later", "event: 'later' is not a hook event; choose input, before_model"),
        (
            "action",
            "explode",
            "on_fail: 'explode' is not an action; choose retry, fallback or suppress",
        ),
        ("id", "reply-length", "hooks.yaml: already has a hook with id 'reply-length'"),
    ],
)
def test_add_hook_refuses_bad_input_naming_the_field(personas, draft, field, value, message):
    form = {
        "id": "ok",
        "type": "max_length",
        "event": "stop",
        "params": "",
        "action": "retry",
        "revision": 1,
        field: value,
    }
    page = (
        client_for(personas.operator)
        .post(f"/drafts/{draft.pk}/hooks/add/", form, follow=True)
        .content.decode()
    )
    assert message in page.replace("&#x27;", "'")
    draft.refresh_from_db()
    assert draft.revision == 1
