"""The studio's one doorway into the Harness format library (harness/).

Everything here delegates to `harness`; the studio never parses Harness files
itself. Zip import/export lives here too because it is about files, not rows.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath

from harness import Bundle, HarnessValidationError, Problem, load_mapping, validate_mapping
from harness.bundle import MAX_FILE_BYTES
from harness.tools import FILE as TOOLS_FILE
from harness.tools import parse_tools
from harness.yamlio import REFUSED, load_yaml
from studio.mcpservers.selectors import mcp_server_problems


@dataclass(frozen=True)
class BundleSummary:
    name: str
    skills: int
    reply_skills: int
    strategy_skills: int
    tools: int
    hooks: int

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def bundle_load(files: dict[str, str]) -> Bundle:
    """Load a {path: text} mapping; raises HarnessValidationError listing every problem."""
    return load_mapping(files)


def bundle_problems(files: dict[str, str]) -> list[Problem]:
    """Every problem in the mapping (empty when valid), the MCP servers the studio refuses included.

    Never raises for bad input. A server is refused when the studio's registry
    (studio.mcpservers) does not hold the name it gives, or when it declares its
    own command or URL: the studio never runs those."""
    problems = list(validate_mapping(files))
    # the parsed servers, never the text: a key may be spelled "mcp\u005fservers"; a tools.yaml with
    # problems of its own has them listed already
    if TOOLS_FILE in files and not any(p.file == TOOLS_FILE for p in problems):
        tools, _problems = parse_tools(files[TOOLS_FILE])
        if tools is not None:
            problems += mcp_server_problems(tools=tools)
    return problems


def bundle_load_for_version(files: dict[str, str]) -> Bundle:
    """bundle_load for files about to become a version: the studio's MCP registry must accept its
    servers."""
    bundle = load_mapping(files)
    problems = mcp_server_problems(tools=bundle.tool_registry)
    if problems:
        raise HarnessValidationError(problems)
    return bundle


def bundle_summary(bundle: Bundle) -> BundleSummary:
    kinds = [skill.kind for skill in bundle.skills.values()]
    return BundleSummary(
        name=bundle.name,
        skills=len(kinds),
        reply_skills=kinds.count("reply"),
        strategy_skills=kinds.count("strategy"),
        tools=len(bundle.tools),
        hooks=len(bundle.hooks),
    )


class BundleArchiveError(ValueError):
    """A .zip that cannot be a Harness bundle; the message says which entry and why."""


MAX_ZIP_ENTRIES = 2000
"""Entries (files and folders) in one uploaded .zip; a 200-skill Harness has about 410."""
_CENTRAL_RECORD = b"PK\x01\x02"
# zipfile bounds what one read unpacks only for deflate; a bzip2 or lzma chunk is unpacked
# whole, and 256 KiB of bzip2 can unpack to gigabytes
_COMPRESSIONS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}
_DRIVE = re.compile(r"^[A-Za-z]:")


def _kib(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n % (1024 * 1024) == 0 else f"{n // 1024} KiB"


def _entry_name(info: zipfile.ZipInfo) -> PurePosixPath:
    """The entry's path, or a BundleArchiveError for a name or kind no bundle file can have."""
    raw = info.orig_filename  # zipfile cuts .filename at a NUL; the original keeps it
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise BundleArchiveError(
            f"{info.filename}: the entry's name holds a control character (NUL, newline, ...)"
        )
    if "\\" in raw:
        raise BundleArchiveError(f"{raw}: paths inside the .zip use '/', not '\\'")
    name = PurePosixPath(raw)
    if name.is_absolute() or _DRIVE.match(raw) or ".." in name.parts:
        raise BundleArchiveError(
            f"{raw}: paths inside the .zip must be relative and stay inside it"
        )
    kind = stat.S_IFMT(info.external_attr >> 16)
    if kind == stat.S_IFLNK:
        raise BundleArchiveError(f"{name}: a symbolic link; a Harness bundle holds only text files")
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        raise BundleArchiveError(
            f"{name}: not a regular file; a Harness bundle holds only text files"
        )
    return name


def files_from_zip(
    data: bytes,
    *,
    max_bytes: int,
    max_entries: int = MAX_ZIP_ENTRIES,
    max_file_bytes: int = MAX_FILE_BYTES,
) -> dict[str, str]:
    """Read a bundle .zip (its files at the root or under one top folder) into {path: text}.

    Every way the archive can be hostile or broken is a BundleArchiveError naming the
    entry and, for a limit, the limit: at most ``max_entries`` entries, ``max_file_bytes``
    per file and ``max_bytes`` in all (the studio passes its MAX_IMPORT_BYTES). The sizes
    are those of the bytes actually unpacked, not the sizes the headers claim.
    """
    # zipfile builds one object per central-directory record before anything can be checked
    # (200k empty entries fit in a 17 MB upload: 100 MB and seconds), so count the records'
    # signature first; every record starts with it, so this count is never below theirs.
    if data.count(_CENTRAL_RECORD) > max_entries:
        raise BundleArchiveError(
            f"the .zip has more than {max_entries} entries (the limit per .zip)"
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except Exception as error:  # zipfile raises a dozen types on hostile bytes
        raise BundleArchiveError(
            f"the upload is not a .zip file, or a damaged one ({error})"
        ) from None
    entries: list[tuple[zipfile.ZipInfo, PurePosixPath]] = []
    seen: set[PurePosixPath] = set()
    for info in infos:
        name = _entry_name(info)
        if info.is_dir():
            continue
        if name in seen:
            raise BundleArchiveError(
                f"{name}: appears twice in the .zip; each path may appear once"
            )
        seen.add(name)
        if info.flag_bits & 0x1:
            raise BundleArchiveError(f"{name}: encrypted; export the bundle without a password")
        if info.compress_type not in _COMPRESSIONS:
            raise BundleArchiveError(
                f"{name}: compression method {info.compress_type} is not supported "
                f"(use {', '.join(_COMPRESSIONS.values())})"
            )
        if info.file_size > max_file_bytes:
            raise BundleArchiveError(
                f"{name}: unpacks to more than {max_file_bytes} bytes "
                f"({_kib(max_file_bytes)}, the limit per file)"
            )
        entries.append((info, name))
    if not entries:
        raise BundleArchiveError(
            "the .zip is empty; it should hold manifest.yaml, skills/, tools.yaml, ..."
        )
    tops = {name.parts[0] for _, name in entries}
    strip = (
        len(tops) == 1
        and all(len(name.parts) > 1 for _, name in entries)
        and "manifest.yaml" not in tops
    )
    files: dict[str, str] = {}
    total = 0
    for info, name in entries:
        rel = PurePosixPath(*name.parts[1:]) if strip else name
        if any(part.startswith(".") or part == "__MACOSX" for part in rel.parts):
            continue  # editor and OS litter (.DS_Store, __MACOSX/), never part of a bundle
        try:
            with archive.open(info) as member:
                content = member.read(max_file_bytes + 1)
        except Exception as error:  # bad CRC, a broken stream, a lying header, ...
            raise BundleArchiveError(f"{name}: the .zip is damaged ({error})") from None
        if len(content) > max_file_bytes:
            raise BundleArchiveError(
                f"{name}: unpacks to more than {max_file_bytes} bytes "
                f"({_kib(max_file_bytes)}, the limit per file)"
            )
        total += len(content)
        if total > max_bytes:
            raise BundleArchiveError(
                f"the .zip unpacks to more than {max_bytes} bytes in all "
                f"(the import limit, MAX_IMPORT_BYTES)"
            )
        try:
            files[str(rel)] = content.decode("utf-8")
        except UnicodeDecodeError:
            raise BundleArchiveError(
                f"{rel}: not UTF-8 text; a Harness bundle holds only text files"
            ) from None
    return files


def files_to_zip(files: dict[str, str], *, folder: str) -> bytes:
    """A .zip holding the bundle directory `folder/` with every file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(f"{folder}/{path}", date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, files[path])
    return buffer.getvalue()


__all__ = [
    "Bundle",
    "BundleArchiveError",
    "BundleSummary",
    "MAX_FILE_BYTES",
    "MAX_ZIP_ENTRIES",
    "REFUSED",
    "HarnessValidationError",
    "Problem",
    "bundle_load",
    "bundle_load_for_version",
    "bundle_problems",
    "bundle_summary",
    "files_from_zip",
    "files_to_zip",
    "load_yaml",
]
