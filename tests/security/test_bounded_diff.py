"""Issue 50 finding 6: the version diff is bounded.

Two versions with one 128 KiB SKILL.md of random short lines: ``GET /h/<name>/diff/?a=1&b=2``
took 40 s and returned 2.4 MB; a 256 KiB file (the per-file limit) passed gunicorn's timeout. A file
whose diff would be too large is now shown as "too large to show, download both" with both digests
and links to both versions' zips; the rest of the page is diffed as before.
"""

from __future__ import annotations

import hashlib
import random
import string
import time

import pytest

from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db


def _random_lines(seed: int, size: int) -> str:
    rng = random.Random(seed)
    lines, total = [], 0
    while total < size:
        line = "".join(rng.choice(string.ascii_lowercase[:4]) for _ in range(rng.randint(1, 4)))
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines) + "\n"


def test_a_huge_skill_diff_is_offered_as_two_downloads_in_bounded_time(
    personas, demo_version, demo_files
):
    from studio.harnesses.services import harness_version_create

    path = "skills/chillchat/SKILL.md"
    files_a = {**demo_files, path: demo_files[path] + _random_lines(1, 128 * 1024)}
    files_b = {**demo_files, path: demo_files[path] + _random_lines(2, 128 * 1024)}
    files_b["skills/aftersale/SKILL.md"] = (
        demo_files["skills/aftersale/SKILL.md"] + "\nA new line.\n"
    )
    v2 = harness_version_create(
        harness=demo_version.harness,
        files=files_a,
        author=personas.operator,
        message="a",
        parent=demo_version,
    )
    v3 = harness_version_create(
        harness=demo_version.harness,
        files=files_b,
        author=personas.operator,
        message="b",
        parent=v2,
    )
    client = client_for(personas.operator)
    for mode in ("unified", "split"):
        started = time.monotonic()
        response = client.get(f"/h/livestream-avatar/diff/?a={v2.number}&b={v3.number}&mode={mode}")
        took = time.monotonic() - started
        page = response.content.decode()
        assert response.status_code == 200
        assert took < 5, f"{mode}: {took:.1f} s"
        assert len(page) < 300_000, f"{mode}: {len(page)} characters"
        assert "too large to show" in page and "download both" in page
        for files in (files_a, files_b):
            assert hashlib.sha256(files[path].encode()).hexdigest() in page
        for number in (v2.number, v3.number):
            assert f"/h/livestream-avatar/v/{number}/export.zip" in page
        assert "A new line." in page  # the small change beside it is still shown
