"""Hostile .zip uploads to both import endpoints: a 400 naming the problem, never a 500, nothing
saved.

Issue 14, finding 3. Every archive is built here: most by ``raw_zip``, which
assembles the local headers, central directory and end record by hand so
each field (sizes, CRC, flags, compression method, file mode) can lie. Each
one is posted to ``/import/`` as an operator and to ``/api/v1/import/`` with
the operator's API token.
"""

from __future__ import annotations

import bz2
import html
import io
import struct
import zipfile
import zlib

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from studio.harnesses.bundles import (
    MAX_ZIP_ENTRIES,
    BundleArchiveError,
    files_from_zip,
    files_to_zip,
)
from studio.harnesses.models import Harness, HarnessVersion

pytestmark = pytest.mark.django_db

PER_FILE = 256 * 1024  # harness.bundle.MAX_FILE_BYTES, the limit per file named in the messages


def _deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def entry(name: str | bytes, plain: bytes | str, **fields) -> dict:
    """One archive member: ``plain`` is what it unpacks to; ``fields`` override the headers."""
    plain = plain.encode() if isinstance(plain, str) else plain
    return {"name": name.encode() if isinstance(name, str) else name, "plain": plain, **fields}


def raw_zip(
    entries: list[dict],
    *,
    count: int | None = None,
    cd_size: int | None = None,
    cd_offset: int | None = None,
) -> bytes:
    out, central = bytearray(), bytearray()
    for e in entries:
        method = e.get("method", zipfile.ZIP_DEFLATED)
        data = e.get("data", _deflate(e["plain"]) if method == zipfile.ZIP_DEFLATED else e["plain"])
        crc, size = e.get("crc", zlib.crc32(e["plain"])), e.get("size", len(e["plain"]))
        flags, extra, name = e.get("flags", 0), e.get("extra", b""), e["name"]
        offset = len(out)
        out += (
            struct.pack(
                "<4s5H3I2H",
                b"PK\x03\x04",
                20,
                flags,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(name),
                len(extra),
            )
            + name
            + extra
            + data
        )
        central += (
            struct.pack(
                "<4s6H3I5H2I",
                b"PK\x01\x02",
                0x031E,
                20,
                flags,
                method,
                0,
                0x21,
                crc,
                len(data),
                size,
                len(name),
                len(extra),
                0,
                0,
                0,
                e.get("mode", 0o100644) << 16,
                offset,
            )
            + name
            + extra
        )
    n = len(entries) if count is None else count
    end = struct.pack(
        "<4s4H2IH",
        b"PK\x05\x06",
        0,
        0,
        n,
        n,
        len(central) if cd_size is None else cd_size,
        len(out) if cd_offset is None else cd_offset,
        0,
    )
    return bytes(out + central + end)


@pytest.fixture
def bundle(demo_files) -> list[dict]:
    """The demo Harness as archive members at the root of the .zip."""
    return [entry(path, text) for path, text in sorted(demo_files.items())]


def _replace(members: list[dict], path: str, new: dict) -> list[dict]:
    return [new if m["name"] == path.encode() else m for m in members]


def _with(members: list[dict], *extra: dict) -> list[dict]:
    return [*members, *extra]


def _edit(path: str, **fields):
    """A builder: the bundle with one member's headers or bytes changed."""

    def build(members: list[dict]) -> bytes:
        member = next(m for m in members if m["name"] == path.encode())
        return raw_zip(_replace(members, path, {**member, **fields}))

    return build


def _zipfile_made(write) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        write(archive)
    return buffer.getvalue()


def _many_entries(n: int) -> bytes:
    return raw_zip(
        [entry(f"skills/s{i}/SKILL.md", "", method=zipfile.ZIP_STORED) for i in range(n)]
    )


def _zip64_end_without_its_record(members: list[dict]) -> bytes:
    data = bytearray(raw_zip(members))
    # 0xFFFF/0xFFFFFFFF in the end record mean "see the zip64 record", which is missing
    data[-22:] = struct.pack(
        "<4s4H2IH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0
    )
    return bytes(data)


def _zip64_extra_claiming_a_terabyte(members: list[dict]) -> list[dict]:
    manifest = next(m for m in members if m["name"] == b"manifest.yaml")
    extra = struct.pack("<HHQ", 0x0001, 8, 2**40)  # the real size of a field set to 0xFFFFFFFF
    return _replace(members, "manifest.yaml", {**manifest, "size": 0xFFFFFFFF, "extra": extra})


# (id, build(members) -> bytes, what the message must say)
CASES = [
    ("not-a-zip", lambda m: b"this is a text file, not an archive", "not a .zip"),
    ("empty-upload", lambda m: b"", "not a .zip"),
    ("empty-archive", lambda m: raw_zip([]), "empty"),
    ("only-folders", lambda m: _zipfile_made(lambda z: z.mkdir("bundle/skills")), "empty"),
    ("truncated-half", lambda m: raw_zip(m)[: len(raw_zip(m)) // 2], "not a .zip"),
    ("truncated-end-record", lambda m: raw_zip(m)[:-5], "not a .zip"),
    (
        "central-directory-offset-past-the-end",
        lambda m: raw_zip(m, cd_offset=10**8),
        "the .zip is damaged",
    ),
    ("bad-crc", _edit("manifest.yaml", crc=0x12345678), "manifest.yaml: the .zip is damaged"),
    (
        "corrupt-deflate-stream",
        _edit("manifest.yaml", data=b"\xff" * 40),
        "manifest.yaml: the .zip is damaged",
    ),
    ("encrypted-entry", _edit("manifest.yaml", flags=0x1), "manifest.yaml: encrypted"),
    (
        "compression-method-99",
        _edit("manifest.yaml", method=99, data=b"xx"),
        "compression method 99",
    ),
    (
        "bzip2-bomb",
        _edit("manifest.yaml", method=zipfile.ZIP_BZIP2, data=bz2.compress(b"\0" * 2**24)),
        "compression method 12 is not supported (use stored, deflate)",
    ),
    (
        "header-claims-fewer-bytes",
        _edit("manifest.yaml", size=3),
        "manifest.yaml: the .zip is damaged",
    ),
    ("header-claims-3-GB", _edit("manifest.yaml", size=3 * 10**9), f"more than {PER_FILE} bytes"),
    (
        "deflate-bomb-honest-header",
        lambda m: raw_zip(_with(m, entry("skills/bomb/SKILL.md", b"\0" * (50 * 2**20)))),
        f"skills/bomb/SKILL.md: unpacks to more than {PER_FILE}",
    ),
    (
        "deflate-bomb-lying-header",
        lambda m: raw_zip(_with(m, entry("skills/bomb/SKILL.md", b"\0" * (50 * 2**20), size=100))),
        "skills/bomb/SKILL.md: the .zip is damaged",
    ),
    (
        "total-over-the-import-limit",
        lambda m: raw_zip(
            _with(m, *[entry(f"skills/pad{i}/SKILL.md", b"\n" * (200 * 1024)) for i in range(6)])
        ),
        "in all",
    ),
    (
        "too-many-entries",
        lambda m: _many_entries(MAX_ZIP_ENTRIES + 1),
        f"more than {MAX_ZIP_ENTRIES} entries",
    ),
    (
        "nested-zip",
        lambda m: raw_zip(_with(m, entry("inner.zip", files_to_zip({"a": "b"}, folder="x")))),
        "inner.zip: not UTF-8 text",
    ),
    (
        "symlink",
        lambda m: raw_zip(_with(m, entry("skills/link/SKILL.md", "/etc/passwd", mode=0o120777))),
        "skills/link/SKILL.md: a symbolic link",
    ),
    (
        "device-file",
        lambda m: raw_zip(_with(m, entry("dev", "", mode=0o020644))),
        "dev: not a regular file",
    ),
    (
        "path-traversal",
        lambda m: raw_zip(_with(m, entry("../../etc/cron.d/x", "* * * * * root id"))),
        "must be relative",
    ),
    (
        "absolute-path",
        lambda m: raw_zip(_with(m, entry("/etc/passwd", "root:x:0:0"))),
        "must be relative",
    ),
    ("windows-traversal", lambda m: raw_zip(_with(m, entry("..\\..\\evil.yaml", "x"))), "use '/'"),
    ("drive-letter", lambda m: raw_zip(_with(m, entry("C:/evil.yaml", "x"))), "must be relative"),
    (
        "duplicate-names",
        lambda m: raw_zip(_with(m, entry("manifest.yaml", "format: x\n"))),
        "manifest.yaml: appears twice",
    ),
    (
        "duplicate-after-normalising",
        lambda m: raw_zip(_with(m, entry("./manifest.yaml", "format: x\n"))),
        "manifest.yaml: appears twice",
    ),
    (
        "nul-in-a-name",
        lambda m: raw_zip(_with(m, entry(b"skills/x/SKILL.md\x00.png", "x"))),
        "control character",
    ),
    (
        "utf8-flag-with-bad-name",
        lambda m: raw_zip(_with(m, entry(b"skills/\xff\xfe/SKILL.md", "x", flags=0x800))),
        "not a .zip",
    ),
    (
        "non-utf8-text",
        lambda m: raw_zip(_replace(m, "manifest.yaml", entry("manifest.yaml", b"name: \xff\xfe"))),
        "manifest.yaml: not UTF-8",
    ),
    (
        "nul-bytes-in-text",
        lambda m: raw_zip(_replace(m, "tools.yaml", entry("tools.yaml", b"tools: []\n\x00"))),
        "NUL bytes",
    ),
    ("zip64-end-without-its-record", _zip64_end_without_its_record, "not a .zip"),
    (
        "zip64-extra-claims-a-terabyte",
        lambda m: raw_zip(_zip64_extra_claiming_a_terabyte(m)),
        f"more than {PER_FILE} bytes",
    ),
    (
        "unknown-file",
        lambda m: raw_zip(_with(m, entry("scripts/run.sh", "#!/bin/sh\nid\n"))),
        "unexpected file",
    ),
]


@pytest.fixture
def operator_clients(personas):
    from studio.accounts.services import api_token_create

    web = Client()
    web.force_login(personas.operator)
    token = api_token_create(user=personas.operator, name="zip tests")[1]
    return web, {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _post(endpoint: str, data: bytes, clients):
    web, api_headers = clients
    if endpoint == "web":
        response = web.post(
            "/import/", {"bundle": io.BytesIO(data), "message": "hostile"}, format="multipart"
        )
        return response, html.unescape(response.content.decode())
    # CONTENT_TYPE again because the test client drops the header when the body is empty
    response = Client().post(
        "/api/v1/import/",
        data,
        content_type="application/zip",
        CONTENT_TYPE="application/zip",
        **api_headers,
    )
    body = response.json()
    return response, " ".join([body.get("error", ""), *body.get("problems", [])])


@pytest.mark.parametrize("endpoint", ["web", "api"])
@pytest.mark.parametrize(("build", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_hostile_zip_gets_a_400_naming_the_problem_and_saves_nothing(
    endpoint, build, says, bundle, operator_clients, settings
):
    settings.MAX_IMPORT_BYTES = 1024 * 1024  # so the total-size case needs 1 MiB, not 20
    response, text = _post(endpoint, build(bundle), operator_clients)
    assert response.status_code == 400, text[:2000]
    assert says in text, text[:2000]
    assert not Harness.objects.exists() and not HarnessVersion.objects.exists()


@pytest.mark.parametrize("endpoint", ["web", "api"])
def test_the_same_bundle_built_by_hand_imports(endpoint, bundle, operator_clients):
    """The control: raw_zip's archives are sound, so each 400 above is the hostile part's doing."""
    response, text = _post(endpoint, raw_zip(bundle), operator_clients)
    assert response.status_code in (201, 302), text[:2000]
    assert HarnessVersion.objects.count() == 1


def test_the_limits_are_named_in_the_messages(bundle):
    with pytest.raises(BundleArchiveError, match=r"more than 2000 entries \(the limit per \.zip\)"):
        files_from_zip(_many_entries(MAX_ZIP_ENTRIES + 1), max_bytes=10**7)
    pad = [entry(f"skills/p{i}/SKILL.md", b"\n" * 200_000) for i in range(3)]
    with pytest.raises(
        BundleArchiveError, match=r"more than 500000 bytes in all \(the import limit"
    ):
        files_from_zip(raw_zip(pad), max_bytes=500_000)
    with pytest.raises(
        BundleArchiveError,
        match=r"unpacks to more than 262144 bytes \(256 KiB, the limit per file\)",
    ):
        files_from_zip(raw_zip([entry("README.md", b"#" * (PER_FILE + 1))]), max_bytes=10**7)


def test_a_file_at_the_per_file_limit_is_read(bundle):
    files = files_from_zip(raw_zip([entry("README.md", b"#" * PER_FILE)]), max_bytes=10**7)
    assert len(files["README.md"]) == PER_FILE


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_random_damage_to_a_sound_zip_is_a_bundle_archive_error_or_files(bundle, data):
    """Any byte flipped, cut or inserted: the reader answers with files or a BundleArchiveError."""
    archive = bytearray(raw_zip(bundle[:3]))
    for _ in range(data.draw(st.integers(1, 8))):
        at = data.draw(st.integers(0, len(archive) - 1))
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip":
            archive[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del archive[at : at + data.draw(st.integers(1, 64))]
        else:
            archive[at:at] = data.draw(st.binary(min_size=1, max_size=16))
        if not archive:
            archive = bytearray(b"PK")
    try:
        files = files_from_zip(bytes(archive), max_bytes=10**6)
    except BundleArchiveError as error:
        assert str(error)
    else:
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
