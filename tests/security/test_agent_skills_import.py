"""Finding 8: a public Agent Skills folder imports through a documented path.

The fixture is a skill in the public format (agentskills.io): SKILL.md with only
`name` and `description` (no `kind`), references/ and assets/ text files and a
LICENSE.txt, written by the test. It goes in through the real entry points:
`python -m harness import-skill` as a subprocess, the studio's import form
through the test client as each role, and the agent loop's `load_skill`.
Whatever could run as code (scripts/, an executable bit, a shebang, a program
file, a binary) is refused with the reason, and nothing is written.
"""

from __future__ import annotations

import html
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.test import Client

from harness import demo_harness_dir, dump_dir, files_digest, load_dir, read_dir
from harness.diff import diff_bundles
from harness.policies import ScriptedPolicy
from harness.runtime import Agent
from harness.skills import MAX_SKILL_FILE_BYTES, MAX_SKILL_FILES
from tests import cli

SKILL_MD = """\
---
name: brand-voice
description: >-
  How our shop sounds in the live room. Use when wording any reply to a viewer.
license: Apache-2.0. LICENSE.txt has the terms
metadata:
  author: example-org
  version: "1.0"
---
# Brand voice

Read [the tone guide](references/tone.md) before a long answer.

- Speak like a friendly shop assistant, never like an advert. {#friendly}
- Say the product's link number when you name it. {#say-the-link}
"""
TONE = "# Tone\n\nWarm, short sentences. No exclamation marks in a row.\n"
TEMPLATE = "Hi {viewer}! Link {link} is {name}.\n"


def public_skill(
    root: Path,
    *,
    name: str = "brand-voice",
    skill_md: str = SKILL_MD,
    extra: dict[str, str | bytes] | None = None,
) -> Path:
    """A public-format skill folder: SKILL.md, references/, assets/, LICENSE.txt (+ extra files)."""
    folder = root / name
    files: dict[str, str | bytes] = {
        "SKILL.md": skill_md,
        "references/tone.md": TONE,
        "assets/reply-template.txt": TEMPLATE,
        "LICENSE.txt": "Apache License 2.0 (abridged for the test)\n",
        **(extra or {}),
    }
    for rel, content in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return folder


def demo_copy(tmp_path: Path) -> Path:
    return dump_dir(load_dir(demo_harness_dir()).files, tmp_path / "bundle")


def import_skill(*args) -> subprocess.CompletedProcess:
    """``python -m harness import-skill ARGS`` through its main, in this process (tests/cli.py)."""
    return cli.call("harness", "import-skill", *map(str, args))


def tree_digest(bundle_dir: Path) -> str:
    files, problems = read_dir(bundle_dir)
    assert not problems
    return files_digest(files)


# --- the CLI ------------------------------------------------------------------------------


def test_a_missing_kind_is_asked_for_with_the_valid_values_and_their_meaning(tmp_path):
    bundle = demo_copy(tmp_path)
    before = tree_digest(bundle)
    result = import_skill(public_skill(tmp_path), "--into", bundle)
    assert result.returncode == 2, result.stdout + result.stderr
    err = result.stderr
    assert "brand-voice/SKILL.md" in err and "kind" in err
    assert "--kind reply" in err and "--kind strategy" in err
    assert "stop gate" in err and "which tools to call" in err  # what each kind means
    assert "Traceback" not in err
    assert "nothing was written" in err
    assert tree_digest(bundle) == before


def test_import_with_kind_writes_the_skill_its_references_and_assets(tmp_path):
    bundle = demo_copy(tmp_path)
    result = import_skill(public_skill(tmp_path), "--into", bundle, "--kind", "strategy")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "brand-voice" in result.stdout
        and 'load_skill {"name": "brand-voice/references/tone.md"}' in result.stdout
    )
    skill_dir = bundle / "skills/brand-voice"
    assert sorted(
        p.relative_to(skill_dir).as_posix() for p in skill_dir.rglob("*") if p.is_file()
    ) == ["LICENSE.txt", "SKILL.md", "assets/reply-template.txt", "references/tone.md"]
    text = (skill_dir / "SKILL.md").read_text()
    assert "kind: strategy\n---\n" in text and text.replace("kind: strategy\n", "") == SKILL_MD
    assert (skill_dir / "references/tone.md").read_text() == TONE
    validated = cli.call("harness", "validate", str(bundle))
    assert validated.returncode == 0 and "15 skills (8 reply, 7 strategy)" in validated.stdout


HOST_TOOLS_MD = SKILL_MD.replace(
    '  version: "1.0"\n', '  version: "1.0"\nallowed-tools: Bash(git:*) Read search_faq\n'
)


def test_host_agent_tools_in_allowed_tools_are_set_aside_not_refused(tmp_path):
    """Public skills name their host agent's tools (Bash, Read); this Harness has none by those
    names."""
    bundle = demo_copy(tmp_path)
    result = import_skill(
        public_skill(tmp_path, skill_md=HOST_TOOLS_MD), "--into", bundle, "--kind", "strategy"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "allowed-tools: set aside Bash(git:*) Read" in result.stdout
    text = (bundle / "skills/brand-voice/SKILL.md").read_text()
    line = next(t for t in text.splitlines() if t.startswith("allowed-tools:"))
    assert line == (
        "allowed-tools: 'search_faq'  # set aside on import (host-agent tools, not in tools.yaml): "
        "Bash(git:*) Read"
    )
    assert load_dir(bundle).skills["brand-voice"].allowed_tools == ("search_faq",)


def test_a_kind_in_the_front_matter_needs_no_flag_and_a_contradicting_flag_is_refused(tmp_path):
    with_kind = SKILL_MD.replace("license:", "kind: reply\nlicense:")
    bundle = demo_copy(tmp_path)
    src = public_skill(tmp_path, skill_md=with_kind)
    before = tree_digest(bundle)
    refused = import_skill(src, "--into", bundle, "--kind", "strategy")
    assert (
        refused.returncode == 2 and "kind: reply" in refused.stderr and "strategy" in refused.stderr
    )
    assert tree_digest(bundle) == before
    result = import_skill(src, "--into", bundle)
    assert result.returncode == 0, result.stderr
    assert (bundle / "skills/brand-voice/SKILL.md").read_text() == with_kind


def test_an_unknown_kind_flag_lists_the_kinds(tmp_path):
    result = import_skill(public_skill(tmp_path), "--into", demo_copy(tmp_path), "--kind", "tool")
    assert result.returncode == 2 and "reply" in result.stderr and "strategy" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "extra,where,why",
    [
        (
            {"scripts/extract.py": "print('hi')\n"},
            "scripts/extract.py",
            "nothing in a Harness runs as code",
        ),
        (
            {"references/helper.py": "import os\n"},
            "references/helper.py",
            "nothing in a Harness runs as code",
        ),
        ({"assets/run.txt": "#!/bin/sh\nid > /tmp/pwned\n"}, "assets/run.txt", "#!"),
        (
            {"assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"},
            "assets/logo.png",
            "not UTF-8 text",
        ),
        ({"Makefile": "all:\n\techo hi\n"}, "Makefile", "references/ or assets/"),
    ],
)
def test_code_and_binaries_are_refused_with_the_reason_and_nothing_is_written(
    tmp_path, extra, where, why
):
    bundle = demo_copy(tmp_path)
    before = tree_digest(bundle)
    result = import_skill(public_skill(tmp_path, extra=extra), "--into", bundle, "--kind", "reply")
    assert result.returncode == 2, result.stdout
    lines = [line for line in result.stderr.splitlines() if where in line]
    assert lines and why in lines[0], result.stderr
    assert "nothing was written" in result.stderr and "Traceback" not in result.stderr
    assert tree_digest(bundle) == before and not (bundle / "skills/brand-voice").exists()


def test_an_executable_file_is_refused_even_when_it_is_text(tmp_path):
    bundle = demo_copy(tmp_path)
    src = public_skill(tmp_path)
    os.chmod(src / "references/tone.md", 0o755)
    result = import_skill(src, "--into", bundle, "--kind", "reply")
    assert result.returncode == 2
    assert "references/tone.md" in result.stderr and "executable" in result.stderr
    assert "chmod -x" in result.stderr
    assert not (bundle / "skills/brand-voice").exists()


def test_a_symlink_is_refused(tmp_path):
    bundle = demo_copy(tmp_path)
    src = public_skill(tmp_path)
    (src / "references/passwd.md").symlink_to("/etc/passwd")
    result = import_skill(src, "--into", bundle, "--kind", "reply")
    assert (
        result.returncode == 2
        and "references/passwd.md" in result.stderr
        and "link" in result.stderr
    )
    assert not (bundle / "skills/brand-voice").exists()


def test_limits_on_count_and_size_are_named(tmp_path):
    bundle = demo_copy(tmp_path)
    many = {f"references/part-{i:02d}.md": f"# Part {i}\n" for i in range(MAX_SKILL_FILES + 1)}
    result = import_skill(public_skill(tmp_path, extra=many), "--into", bundle, "--kind", "reply")
    assert result.returncode == 2 and f"at most {MAX_SKILL_FILES} files" in result.stderr
    big = {"references/huge.md": "x" * (MAX_SKILL_FILE_BYTES + 1)}
    result = import_skill(
        public_skill(tmp_path / "b", extra=big), "--into", bundle, "--kind", "reply"
    )
    assert result.returncode == 2 and "references/huge.md" in result.stderr
    assert f"{MAX_SKILL_FILE_BYTES // 1024} KiB" in result.stderr
    assert not (bundle / "skills/brand-voice").exists()


def test_a_skill_that_exists_already_is_not_overwritten(tmp_path):
    bundle = demo_copy(tmp_path)
    src = public_skill(tmp_path, name="greet", skill_md=SKILL_MD.replace("brand-voice", "greet"))
    before = tree_digest(bundle)
    result = import_skill(src, "--into", bundle, "--kind", "reply")
    assert result.returncode == 2 and "skills/greet" in result.stderr and "already" in result.stderr
    assert tree_digest(bundle) == before


def test_validate_says_what_kind_means_when_a_skill_lacks_it(tmp_path):
    bundle = demo_copy(tmp_path)
    path = bundle / "skills/greet/SKILL.md"
    path.write_text(path.read_text().replace("kind: reply\n", ""))
    result = cli.call("harness", "validate", str(bundle))
    assert result.returncode == 1
    line = next(x for x in result.stdout.splitlines() if ": kind:" in x)
    assert "reply" in line and "strategy" in line and "stop gate" in line and "import-skill" in line


# --- the loaded bundle and the agent ----------------------------------------------------------


@pytest.fixture
def imported_bundle(tmp_path):
    bundle = demo_copy(tmp_path)
    result = import_skill(public_skill(tmp_path), "--into", bundle, "--kind", "strategy")
    assert result.returncode == 0, result.stderr
    return load_dir(bundle)


def test_the_loaded_bundle_keeps_the_files_and_the_diff_names_them(imported_bundle):
    skill = imported_bundle.skills["brand-voice"]
    assert skill.files == {
        "LICENSE.txt": "Apache License 2.0 (abridged for the test)\n",
        "assets/reply-template.txt": TEMPLATE,
        "references/tone.md": TONE,
    }
    demo = load_dir(demo_harness_dir())
    diff = diff_bundles(demo, imported_bundle)
    assert "skills/brand-voice/references/tone.md" in diff.text()
    assert any("brand-voice" in line and "3 files" in line for line in diff.summary), diff.summary
    changed = imported_bundle.with_files(
        {"skills/brand-voice/references/tone.md": TONE + "More.\n"}
    )
    assert (
        "skill brand-voice: file changed references/tone.md"
        in diff_bundles(imported_bundle, changed).summary
    )


def test_load_skill_returns_a_reference_file_inside_the_agent_loop(imported_bundle):
    script = [
        '<tool_call>{"name": "load_skill", "arguments": {"name": "brand-voice"}}</tool_call>'
        '<tool_call>{"name": "load_skill", "arguments": '
        '{"name": "brand-voice/references/tone.md"}}</tool_call>'
        '<tool_call>{"name": "load_skill", "arguments": '
        '{"name": "brand-voice/scripts/x.py"}}</tool_call>',
        '<tool_call>{"name": "load_skill", "arguments": {"name": "greet"}}</tool_call>',
        "Welcome, amy!",
    ]
    request = {"comments": [{"user": "amy", "text": "hi there"}], "room": {"current_link_id": 1}}
    with Agent(bundle=imported_bundle, policy=ScriptedPolicy(script), connect_mcp=False) as agent:
        traj = agent.run(request)
    calls = [c for c in traj.tool_calls if c.name == "load_skill"]
    assert calls[0].result["files"] == [
        "LICENSE.txt",
        "assets/reply-template.txt",
        "references/tone.md",
    ]
    assert calls[1].error is None and calls[1].result == {
        "skill": "brand-voice",
        "file": "references/tone.md",
        "text": TONE,
    }
    assert "no file 'scripts/x.py'" in calls[2].error and "references/tone.md" in calls[2].error


def test_augmentation_carries_the_files_along_when_it_renames_the_skill(tmp_path, imported_bundle):
    source = imported_bundle.dump_dir(tmp_path / "source")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "augment",
            "--harness",
            source,
            "--seed",
            "3",
            "--keep-skills",
            "brand-voice",
            "--out",
            tmp_path / "variant",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    variant = load_dir(tmp_path / "variant")
    carried = [s for s in variant.skills.values() if s.files.get("references/tone.md") == TONE]
    assert len(carried) == 1 and len(carried[0].files) == 3


def test_an_inert_file_cannot_be_smuggled_in_by_hand(tmp_path):
    """A bundle edited on disk (not imported) meets the same rules at validation."""
    bundle = demo_copy(tmp_path)
    (bundle / "skills/greet/scripts").mkdir()
    (bundle / "skills/greet/scripts/run.sh").write_text("echo hi\n")
    (bundle / "skills/orphan/references").mkdir(parents=True)
    (bundle / "skills/orphan/references/a.md").write_text("# a\n")
    result = cli.call("harness", "validate", str(bundle))
    assert result.returncode == 1
    assert "skills/greet/scripts/run.sh:0: (file): " in result.stdout
    assert "nothing in a Harness runs as code" in result.stdout
    assert "skills/orphan/references/a.md" in result.stdout and "SKILL.md" in result.stdout


# --- the studio -----------------------------------------------------------------------------


def skill_zip(
    files: dict[str, str], *, modes: dict[str, int] | None = None, top: str = "brand-voice"
) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for rel, text in files.items():
            info = zipfile.ZipInfo(f"{top}/{rel}", date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (modes or {}).get(rel, 0o644) << 16
            archive.writestr(info, text)
    return buffer.getvalue()


PUBLIC_FILES = {
    "SKILL.md": SKILL_MD,
    "references/tone.md": TONE,
    "assets/reply-template.txt": TEMPLATE,
}


@pytest.fixture
def draft(personas, demo_version):
    from studio.harnesses.services import draft_create

    return draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="t"
    )


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def upload(client, draft, data: bytes, **fields):
    url = f"/drafts/{draft.pk}/skills/import/"
    payload = {"revision": draft.revision, "skill": _named(data), **fields}
    return client.post(url, payload)


def _named(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("brand-voice.zip", data, content_type="application/zip")


@pytest.mark.django_db
def test_studio_form_shows_the_kinds_and_their_meaning(personas, draft):
    page = client_for(personas.operator).get(f"/drafts/{draft.pk}/skills/import/").content.decode()
    assert (
        'type="radio" name="kind" value="reply"' in page
        and 'type="radio" name="kind" value="strategy"' in page
    )
    assert "stop gate" in page and "which tools to call" in page
    assert "scripts/" in page  # says what is refused and why
    editor = client_for(personas.operator).get(f"/drafts/{draft.pk}/").content.decode()
    assert f"/drafts/{draft.pk}/skills/import/" in editor


@pytest.mark.django_db
def test_studio_asks_for_the_kind_then_imports_into_the_draft(personas, draft):
    client = client_for(personas.operator)
    response = upload(client, draft, skill_zip(PUBLIC_FILES))
    assert response.status_code == 400
    page = response.content.decode()
    assert "has no kind" in page and "choose" in page and "stop gate" in page
    draft.refresh_from_db()
    assert draft.revision == 1 and not any(p.startswith("skills/brand-voice/") for p in draft.files)

    response = upload(client, draft, skill_zip(PUBLIC_FILES), kind="strategy")
    assert response.status_code == 302
    assert response["Location"].endswith("?path=skills/brand-voice/SKILL.md")
    draft.refresh_from_db()
    assert draft.revision == 2 and draft.problems == []
    assert draft.files["skills/brand-voice/references/tone.md"] == TONE
    assert "kind: strategy" in draft.files["skills/brand-voice/SKILL.md"]
    editor = client.get(response["Location"]).content.decode()
    assert "skills/brand-voice/references/tone.md" in editor

    commit = client.post(f"/drafts/{draft.pk}/commit/", {"message": "brand voice"}, follow=True)
    assert commit.status_code == 200
    export = client.get(f"/h/{draft.harness.name}/v/2/export.zip")
    names = zipfile.ZipFile(io.BytesIO(export.content)).namelist()
    assert f"{draft.harness.name}/skills/brand-voice/references/tone.md" in names
    assert f"{draft.harness.name}/skills/brand-voice/assets/reply-template.txt" in names


@pytest.mark.django_db
def test_studio_import_says_which_host_agent_tools_it_set_aside(personas, draft):
    client = client_for(personas.operator)
    response = upload(
        client, draft, skill_zip({**PUBLIC_FILES, "SKILL.md": HOST_TOOLS_MD}), kind="strategy"
    )
    assert response.status_code == 302
    page = client.get(response["Location"]).content.decode()
    assert "allowed-tools: set aside Bash(git:*) Read" in html.unescape(page)
    draft.refresh_from_db()
    assert draft.problems == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "files,modes,why",
    [
        (
            {**PUBLIC_FILES, "scripts/run.sh": "echo hi\n"},
            None,
            "nothing in a Harness runs as code",
        ),
        (PUBLIC_FILES, {"references/tone.md": 0o755}, "executable"),
        ({**PUBLIC_FILES, "assets/hook.txt": "#!/usr/bin/env python\n"}, None, "#!"),
        ({"README.md": "no skill here\n"}, None, "SKILL.md"),
    ],
)
def test_studio_refuses_code_with_the_reason_and_keeps_the_draft(
    personas, draft, files, modes, why
):
    client = client_for(personas.operator)
    response = upload(client, draft, skill_zip(files, modes=modes), kind="reply")
    assert response.status_code == 400
    assert why in response.content.decode()
    draft.refresh_from_db()
    assert draft.revision == 1 and not any(p.startswith("skills/brand-voice/") for p in draft.files)


@pytest.mark.django_db
def test_studio_refuses_a_broken_zip_without_a_500(personas, draft):
    response = upload(
        client_for(personas.operator), draft, b"PK\x03\x04 not really a zip", kind="reply"
    )
    assert response.status_code == 400 and "zip" in response.content.decode()


@pytest.mark.django_db
def test_studio_import_from_a_stale_page_is_refused(personas, draft):
    response = upload(
        client_for(personas.operator), draft, skill_zip(PUBLIC_FILES), kind="reply", revision=0
    )
    assert (
        response.status_code == 400
        and "the draft changed since you opened it" in response.content.decode()
    )
    draft.refresh_from_db()
    assert draft.revision == 1 and "skills/brand-voice/SKILL.md" not in draft.files


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["reviewer", "ml_engineer", "outsider"])
def test_roles_that_may_not_edit_cannot_import(personas, draft, role):
    client = client_for(personas.by_role()[role])
    assert client.get(f"/drafts/{draft.pk}/skills/import/").status_code == 403
    assert upload(client, draft, skill_zip(PUBLIC_FILES), kind="reply").status_code == 403
    draft.refresh_from_db()
    assert draft.revision == 1
