"""YAML bombs sent to every studio entry point that reads YAML: a 400 within 2 s, little memory,
nothing saved.

Issue 14, finding 2. The entry points, from studio/*/urls.py (dataset and case
uploads, the playground, endpoints and the evolution pages read JSON, not YAML):

- ``POST /drafts/<id>/preview/`` (view rights: a reviewer), a SKILL.md's front matter
- ``POST /drafts/<id>/save/`` for a SKILL.md and for hooks.yaml
- ``POST /drafts/<id>/hooks/add/``, the hook form's ``params``
- ``POST /drafts/<id>/skills/import/``, an Agent Skills folder's SKILL.md (a .zip)
- ``POST /conflicts/<id>/``, the merged text of a conflict
- ``POST /import/`` and ``POST /api/v1/import/`` (a .zip, and JSON ``files``)
- ``GET /drafts/<id>/`` of a draft that already holds a bomb (stored before the fix)

``POST /drafts/<id>/skills/add/`` is not among them: harness.text_edit writes its
description into the front matter as a quoted string, never as YAML.

Each bomb is one line of flow YAML, so the same text serves as a document, a
form field and a front-matter value.
"""

from __future__ import annotations

import html
import io
import json
import resource
import time
import tracemalloc
from contextlib import contextmanager

import pytest
from django.test import Client

from harness.yamlio import MAX_YAML_BYTES, MAX_YAML_DEPTH, REFUSED, load_yaml
from studio.accounts.services import api_token_create
from studio.harnesses.bundles import files_to_zip
from studio.harnesses.models import Draft, DraftConflict, HarnessVersion
from studio.harnesses.services import draft_create

pytestmark = pytest.mark.django_db

SKILL = "skills/item_qa/SKILL.md"


def _laughs() -> str:
    """The billion laughs: nine levels of nine aliases, 9**9 'lol's from about 400 bytes."""
    levels = ["a: &a [" + ", ".join(["lol"] * 9) + "]"]
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True):
        levels.append(f"{cur}: &{cur} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return "{" + ", ".join(levels) + "}"


BOMBS = {
    "billion-laughs": (_laughs(), "anchors and aliases"),
    # 900 is under libyaml's own cap (1000), so the reader's bound is what answers
    "deep-nesting": (
        "{deep: " + "[" * 900 + "]" * 900 + "}",
        f"deeper than {MAX_YAML_DEPTH} levels",
    ),
    "oversized": ("{big: " + "x" * (300 * 1024) + "}", "256 KiB"),
}
MAX_PEAK_BYTES = 200 * 1024 * 1024
MAX_SECONDS = 2.0


def _skill(bomb: str) -> str:
    return (
        "---\nname: item_qa\ndescription: Questions about an "
        f"item.\nkind: reply\nbomb: {bomb}\n---\n# item_qa\n\n- Answer.\n"
    )


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:"))


@contextmanager
def _bounded():
    """Measures one request: wall time, the peak of its Python allocations and how far its
    resident memory rose.

    tracemalloc sees every Python object the request builds, which is where a bomb
    goes off (the expanded aliases are Python lists and strings, the rendered
    page is a Python string); libyaml's and nh3's C buffers are invisible to it
    but scale with the text, which the reader caps at 256 KiB. RLIMIT_AS is only
    a safety net: should a regression let a bomb through, the request fails
    with MemoryError in seconds instead of swapping the machine that runs the tests.
    """
    vm_kib = _status_kib("VmSize")
    # Resident memory too (C buffers included): reset the peak (VmHWM) to the current RSS, and read
    # how far it rose during the request.
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    rss_before = _status_kib("VmRSS")
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm_kib * 1024 + 1024**3
    resource.setrlimit(
        resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard)
    )
    tracemalloc.start()
    measured = {}
    started = time.monotonic()
    try:
        yield measured
    finally:
        measured["seconds"] = time.monotonic() - started
        measured["peak"] = tracemalloc.get_traced_memory()[1]
        measured["resident_growth"] = 1024 * (_status_kib("VmHWM") - rss_before)
        tracemalloc.stop()
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture
def world(personas, demo_version, demo_files):
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="t"
    )
    conflict = DraftConflict.objects.create(
        draft=draft,
        path=SKILL,
        author=personas.operator,
        base_revision=1,
        seen_revision=1,
        their_text=draft.files[SKILL],
        my_text="mine",
    )
    operator, reviewer = Client(), Client()
    operator.force_login(personas.operator)
    reviewer.force_login(personas.reviewer)
    token = api_token_create(user=personas.operator, name="bombs")[1]
    # the first request to a page compiles its template and imports its views: not the bomb's cost
    for url in (
        f"/drafts/{draft.pk}/?path={SKILL}",
        "/import/",
        f"/drafts/{draft.pk}/skills/import/",
        f"/conflicts/{conflict.pk}/",
    ):
        assert operator.get(url).status_code == 200
    return {
        "draft": draft,
        "conflict": conflict,
        "operator": operator,
        "reviewer": reviewer,
        "api": {"HTTP_AUTHORIZATION": f"Bearer {token}"},
        "files": demo_files,
    }


def _preview(w, bomb):
    return w["reviewer"].post(f"/drafts/{w['draft'].pk}/preview/", {"text": _skill(bomb)})


def _save_skill(w, bomb):
    return w["operator"].post(
        f"/drafts/{w['draft'].pk}/save/", {"path": SKILL, "text": _skill(bomb), "revision": 1}
    )


def _save_hooks(w, bomb):
    return w["operator"].post(
        f"/drafts/{w['draft'].pk}/save/", {"path": "hooks.yaml", "text": bomb, "revision": 1}
    )


def _add_hook(w, bomb):
    form = {
        "id": "bomb",
        "type": "max_length",
        "event": "stop",
        "matcher": "",
        "params": bomb,
        "action": "retry",
        "message": "",
        "revision": 1,
    }
    return w["operator"].post(f"/drafts/{w['draft'].pk}/hooks/add/", form)


def _resolve_conflict(w, bomb):
    return w["operator"].post(
        f"/conflicts/{w['conflict'].pk}/", {"choice": "merged", "text": _skill(bomb)}
    )


def _import_skill(w, bomb):
    data = files_to_zip({"SKILL.md": _skill(bomb).replace("item_qa", "bomb")}, folder="bomb")
    form = {"skill": io.BytesIO(data), "kind": "reply", "revision": 1}
    return w["operator"].post(f"/drafts/{w['draft'].pk}/skills/import/", form, format="multipart")


def _bundle(w, bomb) -> dict[str, str]:
    return {**w["files"], "tools.yaml": bomb}


def _import_page(w, bomb):
    data = files_to_zip(_bundle(w, bomb), folder="livestream-avatar")
    return w["operator"].post(
        "/import/", {"bundle": io.BytesIO(data), "message": "bomb"}, format="multipart"
    )


def _import_api_zip(w, bomb):
    data = files_to_zip(_bundle(w, bomb), folder="livestream-avatar")
    return Client().post("/api/v1/import/", data, content_type="application/zip", **w["api"])


def _import_api_json(w, bomb):
    body = json.dumps({"files": _bundle(w, bomb), "message": "bomb"})
    return Client().post("/api/v1/import/", body, content_type="application/json", **w["api"])


ENTRY_POINTS = [
    _preview,
    _save_skill,
    _save_hooks,
    _add_hook,
    _import_skill,
    _resolve_conflict,
    _import_page,
    _import_api_zip,
    _import_api_json,
]


@pytest.mark.timeout(60)  # a regression fails here in a minute, not at the suite's 10
@pytest.mark.parametrize("send", ENTRY_POINTS, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_a_yaml_bomb_gets_a_400_quickly_in_little_memory_and_nothing_is_saved(send, bomb, world):
    text, says = BOMBS[bomb]
    with _bounded() as measured:
        response = send(world, text)
    body = html.unescape(response.content.decode())
    assert response.status_code == 400, body[:3000]
    assert says in body, body[:3000]
    assert measured["seconds"] < MAX_SECONDS, measured
    assert measured["peak"] < MAX_PEAK_BYTES, measured
    assert measured["resident_growth"] < MAX_PEAK_BYTES, measured
    assert len(response.content) < 2 * MAX_YAML_BYTES + 200_000  # the page did not expand the bomb
    draft = Draft.objects.get(pk=world["draft"].pk)
    assert draft.revision == 1 and draft.files == world["draft"].files
    assert HarnessVersion.objects.count() == 1


def test_a_bomb_already_stored_in_a_draft_is_shown_as_refused(world):
    """A draft saved before the reader refused aliases still holds one; its editor page stays
    small."""
    Draft.objects.filter(pk=world["draft"].pk).update(
        files={**world["draft"].files, SKILL: _skill(_laughs())}
    )
    with _bounded() as measured:
        response = world["reviewer"].get(f"/drafts/{world['draft'].pk}/?path={SKILL}")
    assert response.status_code == 200
    assert "anchors and aliases" in html.unescape(response.content.decode())
    assert measured["seconds"] < MAX_SECONDS and measured["peak"] < MAX_PEAK_BYTES, measured
    assert len(response.content) < 200_000


def test_an_ordinary_preview_and_hook_still_work(world):
    """The control: the same requests with sound YAML answer as before."""
    text = world["draft"].files[SKILL]
    preview = world["reviewer"].post(f"/drafts/{world['draft'].pk}/preview/", {"text": text})
    assert preview.status_code == 200 and "<dt>kind</dt>" in preview.content.decode()
    hook = _add_hook(world, "{max_chars: 200}")
    assert hook.status_code == 302
    assert "  - id: bomb" in Draft.objects.get(pk=world["draft"].pk).files["hooks.yaml"]


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (
            "a: &x [1, 2]\nb: *x\n",
            1,
            "YAML anchors and aliases (&name / *name) are not read",
        ),  # the anchor's line
        (
            "a: &x hello\nb: [*x, *x]\n",
            1,
            "anchors and aliases",
        ),  # a scalar's too: a preview renders each copy
        ("? &k key\n: 1\nb: {*k : 2}\n", 1, "anchors and aliases"),  # an alias as a key
        ("a: &x {b: *x}\n", 1, "anchors and aliases"),  # an alias inside its own anchor
        (
            "".join("  " * i + f"k{i}:\n" for i in range(70)) + "  " * 70 + "x\n",
            65,
            "deeper than 64",
        ),
        ("k: " + "[" * 65 + "]" * 65 + "\n", 1, "deeper than 64"),
        ("k: " + "[" * 1200 + "]" * 1200 + "\n", 1, "deeper than 64"),  # past libyaml's own cap
        ("# " + "x" * MAX_YAML_BYTES + "\n", 1, f"the limit is {MAX_YAML_BYTES} bytes (256 KiB)"),
    ],
)
def test_the_reader_refuses_aliases_depth_and_size_at_the_line_naming_the_limit(text, line, says):
    data, _lines, problems = load_yaml(text, file="x.yaml")
    assert data is None and len(problems) == 1, problems
    assert (problems[0].line, problems[0].field) == (line, REFUSED) and says in problems[
        0
    ].message, problems


def test_the_reader_accepts_the_bounds_themselves():
    deep = "k: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1) + "\n"
    assert load_yaml(deep, file="x.yaml")[2] == []
    assert (
        load_yaml("a: &x 1\nb: 2\n", file="x.yaml")[2] == []
    )  # an anchor nobody refers to expands nothing
    big = "k: " + "x" * (MAX_YAML_BYTES - 4) + "\n"
    assert load_yaml(big, file="x.yaml")[2] == []


def test_the_reader_keeps_nothing_between_calls():
    """A studio process parses on every save; what one document built must not stay alive."""
    load_yaml("warm: up\n", file="x.yaml")
    tracemalloc.start()
    for i in range(200):
        load_yaml(f"k{i}: [{', '.join(['v' * 50] * 50)}]\n", file="x.yaml")
    current, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert current < 200_000, current


# --- the Markdown body
# ------------------------------------------------------------------------------ python-markdown
# took 5.5 s on 4,000 '[' (quadratic): any viewer could stall a worker thread with one preview. The
# renderer is now cmark-gfm (linear by design); these bodies are near the size cap.
MARKDOWN_BOMBS = {
    "open brackets": "[" * 200_000,
    "unclosed links": "[a](" * 50_000,
    "emphasis runs": "*a" * 100_000,
    "underscores": "_a" * 100_000,
    "angle brackets": "<" * 200_000,
}


@pytest.mark.parametrize("body", MARKDOWN_BOMBS.values(), ids=MARKDOWN_BOMBS.keys())
def test_a_pathological_markdown_body_previews_quickly(world, body):
    text = f"---\nname: item_qa\ndescription: Questions about an item.\nkind: reply\n---\n{body}\n"
    with _bounded() as measured:
        response = world["reviewer"].post(f"/drafts/{world['draft'].pk}/preview/", {"text": text})
    assert response.status_code == 200
    assert measured["seconds"] < MAX_SECONDS, f"{measured['seconds']:.1f} s"
    assert measured["peak"] < MAX_PEAK_BYTES and measured["resident_growth"] < MAX_PEAK_BYTES, (
        measured
    )


def test_the_rendered_body_stays_sanitised(world):
    text = (
        "---\nname: item_qa\ndescription: Questions about an item.\nkind: reply\n---\n"
        "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>\n\n"
        "[x](javascript:alert(1)) <img src=x onerror=alert(1)> [ok](https://example.com)\n"
    )
    html = (
        world["reviewer"]
        .post(f"/drafts/{world['draft'].pk}/preview/", {"text": text})
        .content.decode()
    )
    assert "<h1>Title</h1>" in html and "<td>1</td>" in html
    assert "<script>alert" not in html and "javascript:" not in html and "onerror" not in html
    assert 'href="https://example.com"' in html
