"""The editor: drafts, inline validation at the line, locking, conflicts, commit, preview, diffs."""

import re

import pytest
from studio_testing import client_for

from studio.harnesses.models import Draft, DraftConflict, HarnessVersion
from studio.harnesses.services import draft_create, draft_file_save

pytestmark = pytest.mark.django_db

SKILL = "skills/item_qa/SKILL.md"


@pytest.fixture
def draft(personas, demo_version):
    return draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="t"
    )


def save(client, draft, text, *, revision=None, path=SKILL):
    return client.post(
        f"/drafts/{draft.pk}/save/",
        {
            "path": path,
            "text": text,
            "revision": revision if revision is not None else draft.revision,
        },
        follow=True,
    )


def test_broken_front_matter_is_saved_and_shown_inline_at_its_line(personas, draft):
    client = client_for(personas.operator)
    text = draft.files[SKILL].replace("kind: reply", "kind: [reply")  # YAML syntax error on line 7
    bad_line = text.split("\n").index("kind: [reply") + 1
    page = save(client, draft, text).content.decode()
    draft.refresh_from_db()
    assert draft.files[SKILL] == text and draft.revision == 2  # nothing lost
    assert any(p["file"] == SKILL for p in draft.problems)
    assert 'id="file-problems"' in page
    lines = {int(n) for n in re.findall(r'class="inline-problem" data-line="(\d+)"', page)}
    assert lines and all(abs(n - bad_line) <= 1 for n in lines), (lines, bad_line)
    assert "Commit as new version</button>" in page and "disabled" in page


def test_commit_is_refused_while_problems_remain_then_works_after_the_fix(personas, draft):
    client = client_for(personas.operator)
    good = draft.files[SKILL]
    save(client, draft, good.replace("name: item_qa", "name: Item QA!"))
    draft.refresh_from_db()
    page = client.post(
        f"/drafts/{draft.pk}/commit/", {"message": "try"}, follow=True
    ).content.decode()
    assert "Cannot commit" in page and HarnessVersion.objects.count() == 1
    fixed = good.rstrip("\n") + "\n- Never promise a delivery date the tools did not return.\n"
    save(client, draft, fixed)
    draft.refresh_from_db()
    assert draft.problems == []
    response = client.post(
        f"/drafts/{draft.pk}/commit/", {"message": "delivery dates"}, follow=True
    )
    v2 = HarnessVersion.objects.get(number=2)
    assert (v2.parent.number, v2.author, v2.message) == (1, personas.operator, "delivery dates")
    page = response.content.decode()
    assert response.request["PATH_INFO"] == "/h/livestream-avatar/diff/"
    assert "Never promise a delivery date" in page and SKILL in page
    draft.refresh_from_db()
    assert draft.status == Draft.COMMITTED and draft.committed_version == v2


def test_unchanged_draft_cannot_be_committed(personas, draft):
    page = client_for(personas.operator).post(
        f"/drafts/{draft.pk}/commit/", {"message": "x"}, follow=True
    )
    assert "nothing to commit" in page.content.decode()


def test_second_save_of_the_same_revision_gets_the_conflict_page_and_loses_nothing(personas, draft):
    first, second = client_for(personas.operator), client_for(personas.operator)
    base = draft.files[SKILL]
    theirs = base + "- Theirs: mention the size chart.\n"
    mine = base + "- Mine: never quote shipping times.\n"
    save(first, draft, theirs, revision=1)
    response = save(second, draft, mine, revision=1)
    page = response.content.decode()
    assert response.request["PATH_INFO"].startswith("/conflicts/")
    assert "Theirs: mention the size chart." in page and "Mine: never quote shipping times." in page
    assert 'class="sbs"' in page  # the diff between the two
    draft.refresh_from_db()
    assert draft.files[SKILL] == theirs
    conflict = DraftConflict.objects.get()
    assert conflict.my_text == mine and conflict.resolved_at is None
    # keep mine: saved on top of the current revision
    second.post(f"/conflicts/{conflict.pk}/", {"choice": "mine"})
    draft.refresh_from_db()
    conflict.refresh_from_db()
    assert draft.files[SKILL] == mine and draft.revision == 3 and conflict.resolved_at is not None


def test_a_save_that_lands_while_another_is_validated_is_a_conflict_not_a_loss(
    personas, draft, monkeypatch
):
    """The bundle is validated before the write lock is taken (on SQLite it is the whole
    database's), so another save may land meanwhile: the first one then becomes a conflict, and
    neither text is lost."""
    from studio.harnesses.services import drafts

    theirs = draft.files[SKILL] + "\n- Their rule, saved during the validation.\n"
    mine = draft.files[SKILL] + "\n- My rule.\n"
    validate = drafts.bundle_problems

    def validate_while_someone_saves(files):
        monkeypatch.setattr(drafts, "bundle_problems", validate)
        draft_file_save(
            draft=draft, path=SKILL, text=theirs, base_revision=1, actor=personas.operator
        )
        return validate(files)

    monkeypatch.setattr(drafts, "bundle_problems", validate_while_someone_saves)
    result = draft_file_save(
        draft=draft, path=SKILL, text=mine, base_revision=1, actor=personas.operator
    )
    assert result.conflict is not None and result.conflict.my_text == mine
    draft.refresh_from_db()
    assert draft.revision == 2 and draft.files[SKILL] == theirs


def test_conflicting_save_of_another_file_is_kept_too(personas, draft):
    draft_file_save(
        draft=draft,
        path=SKILL,
        text=draft.files[SKILL] + "\n",
        base_revision=1,
        actor=personas.operator,
    )
    result = draft_file_save(
        draft=draft, path="tools.yaml", text="tools: []\n", base_revision=1, actor=personas.operator
    )
    assert result.conflict is not None and result.conflict.my_text == "tools: []\n"


def test_skill_preview_is_sanitised(personas, draft):
    payload = (
        draft.files[SKILL] + '\n<script>alert("pwned")</script>\n<img src=x '
        'onerror="alert(1)">\n[link](javascript:alert(2))\n'
    )
    client = client_for(personas.operator)
    preview = client.post(f"/drafts/{draft.pk}/preview/", {"text": payload}).content.decode()
    assert "<script" not in preview and "onerror" not in preview and "javascript:" not in preview
    assert "<li>" in preview  # the rules still render as a list
    save(client, draft, payload)
    page = client.get(f"/drafts/{draft.pk}/?path={SKILL}").content.decode()
    assert '<script>alert("pwned")</script>' not in page
    assert (
        "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    )  # the source, escaped, in the textarea


def test_add_and_remove_a_skill(personas, draft):
    client = client_for(personas.operator)
    client.post(
        f"/drafts/{draft.pk}/skills/add/",
        {
            "name": "size_advice",
            "kind": "reply",
            "description": "Advise on sizes from the size chart.",
            "revision": 1,
        },
    )
    draft.refresh_from_db()
    assert "skills/size_advice/SKILL.md" in draft.files and draft.problems == []
    page = client.get(f"/drafts/{draft.pk}/changes/").content.decode()
    assert "skills/size_advice/SKILL.md" in page
    client.post(
        f"/drafts/{draft.pk}/files/delete/",
        {"path": "skills/size_advice/SKILL.md", "revision": draft.revision},
    )
    draft.refresh_from_db()
    assert "skills/size_advice/SKILL.md" not in draft.files


def test_other_roles_cannot_write_someone_elses_draft(personas, draft):
    response = client_for(personas.reviewer).post(
        f"/drafts/{draft.pk}/save/", {"path": SKILL, "text": "x", "revision": 1}
    )
    assert response.status_code == 403
    draft.refresh_from_db()
    assert draft.revision == 1


def test_diff_page_unified_and_side_by_side_with_summary(personas, draft):
    client = client_for(personas.operator)
    text = (
        draft.files[SKILL].rstrip("\n")
        + "\n- Never promise a delivery date the tools did not return.\n"
    )
    save(client, draft, text)
    hooks = draft.files["hooks.yaml"]
    client.post(f"/drafts/{draft.pk}/commit/", {"message": "rule"})
    unified = client.get("/h/livestream-avatar/diff/?a=1&b=2").content.decode()
    assert '<span class="add">+- Never promise a delivery date' in unified
    assert 'id="change-summary"' in unified and "item_qa" in unified  # stored at commit: inline
    assert "hx-get" not in unified.split('id="change-summary"')[0][-300:]
    split = client.get("/h/livestream-avatar/diff/?a=1&b=2&mode=split").content.decode()
    assert 'class="sbs"' in split and "unchanged lines" in split
    assert hooks  # hooks.yaml untouched, so not listed as changed
    assert 'data-path="hooks.yaml"' not in split


def test_moving_request_text_ahead_of_static_blocks_is_a_warning_with_its_cost(personas, draft):
    """Issue 26: the editor and the diff say what a block order costs each request in prefill, never
    an error."""
    import yaml

    from harness.yamlio import load_yaml

    client = client_for(personas.operator)
    editor = client.get(f"/drafts/{draft.pk}/?path=prompt.yaml").content.decode()
    assert 'id="prompt-sharing" class="muted">prompt: shared by every request: ' in editor
    prompt, _lines, _problems = load_yaml(draft.files["prompt.yaml"], file="prompt.yaml")
    order = ["persona", "boundaries", "products", "room", "faq", "skills", "tools"]
    prompt["blocks"] = sorted(prompt["blocks"], key=lambda block: order.index(block["id"]))
    page = save(
        client,
        draft,
        yaml.safe_dump(prompt, sort_keys=False, allow_unicode=True),
        path="prompt.yaml",
    ).content.decode()
    draft.refresh_from_db()
    assert not draft.problems  # a warning, not a problem: the block order is the operator's
    editor = client.get(f"/drafts/{draft.pk}/?path=prompt.yaml").content.decode()
    # issue 38 item 10: a warning is shown as one, beside the "valid" banner, not as grey side-pane
    # text
    banner = editor.split('id="draft-valid">valid</span>', 1)[1][:600]
    assert (
        '<p class="msg msg-warning" id="prompt-cost-warning"><strong>Warning, prompt cost:</strong>'
        in banner
    )
    assert 'id="prompt-sharing"' not in editor
    assert "warning: static block(s) skills, tools come after request-dependent text" in banner
    changes = client.get(f"/drafts/{draft.pk}/changes/").content.decode()
    assert "prompt prefix shared by every request: " in changes
    assert (
        "warning: static block(s) skills, tools now follow "
        "request-dependent text: every request prefills" in changes
    )
    assert page


def test_a_summary_between_any_two_versions_loads_on_demand(personas, demo_version, demo_files):
    from studio_testing import edit_skill_rule

    from studio.harnesses.services import harness_version_create

    harness = demo_version.harness
    v2 = harness_version_create(
        harness=harness,
        files=edit_skill_rule(demo_files),
        author=personas.operator,
        message="2",
        parent=demo_version,
    )
    harness_version_create(
        harness=harness,
        files=edit_skill_rule(edit_skill_rule(demo_files), skill="chillchat"),
        author=personas.operator,
        message="3",
        parent=v2,
    )
    client = client_for(personas.reviewer)
    page = client.get("/h/livestream-avatar/diff/?a=1&b=3").content.decode()
    assert (
        'hx-get="/h/livestream-avatar/diff/summary/?a=1&amp;b=3"' in page
        and 'hx-trigger="load"' in page
    )
    summary = client.get("/h/livestream-avatar/diff/summary/?a=1&b=3").content.decode()
    assert "item_qa" in summary and "chillchat" in summary
    again = client.get("/h/livestream-avatar/diff/?a=1&b=3").content.decode()
    assert 'hx-trigger="load"' not in again and "chillchat" in again


def test_the_hook_form_appends_a_validated_hook_and_keeps_comments(personas, draft):
    client = client_for(personas.operator)
    before = draft.files["hooks.yaml"]
    form = {
        "id": "short-replies",
        "type": "max_length",
        "event": "stop",
        "matcher": "",
        "params": "{max_chars: 120}",
        "action": "retry",
        "message": "Say it in under 120 characters.",
        "revision": 1,
    }
    page = client.post(f"/drafts/{draft.pk}/hooks/add/", form, follow=True).content.decode()
    draft.refresh_from_db()
    after = draft.files["hooks.yaml"]
    assert after.startswith(before.rstrip("\n")) and "  - id: short-replies" in after
    assert draft.problems == [] and "Added hook short-replies" in page
    # a parameter outside the type's schema is saved and shown inline, like any edit
    bad = {**form, "id": "too-short", "params": "{max_chars: 3}", "revision": draft.revision}
    page = client.post(f"/drafts/{draft.pk}/hooks/add/", bad, follow=True).content.decode()
    draft.refresh_from_db()
    problems = [p for p in draft.problems if p["file"] == "hooks.yaml"]
    assert problems and "max_chars" in problems[0]["field"] + problems[0]["message"]
    last_line = len(draft.files["hooks.yaml"].rstrip("\n").split("\n"))
    assert any(abs(p["line"] - last_line) <= 3 for p in problems), (problems, last_line)
    assert 'class="inline-problem"' in page


def test_the_hook_form_refuses_bad_input_naming_the_field(personas, draft):
    client = client_for(personas.operator)
    form = {
        "id": "Bad Id",
        "type": "max_length",
        "event": "stop",
        "params": "",
        "action": "retry",
        "revision": 1,
    }
    page = client.post(f"/drafts/{draft.pk}/hooks/add/", form, follow=True).content.decode()
    assert "id: &#x27;Bad Id&#x27; is not an id" in page
    page = client.post(
        f"/drafts/{draft.pk}/hooks/add/", {**form, "id": "ok", "params": "[1, 2"}, follow=True
    ).content.decode()
    assert "params: not YAML" in page
    draft.refresh_from_db()
    assert draft.revision == 1


@pytest.mark.parametrize("revision", ["2nd", ""])
def test_a_save_whose_revision_is_no_number_is_refused_naming_it_and_keeps_the_text(
    personas, draft, revision
):
    text = draft.files[SKILL] + "\nmore\n"
    response = save(client_for(personas.operator), draft, text, revision=revision)
    page = response.content.decode()
    assert response.status_code == 400 and "revision: expected a whole number" in page
    assert "more" in page  # the typed text is shown again, not lost
    draft.refresh_from_db()
    assert draft.revision == 1 and draft.files[SKILL] != text
