"""Reading JSON Lines files: case sets, examples, trajectories, per-item results.

Two readers, for the two kinds of file the project keeps:

- :func:`jsonl_records` for files a person wrote or handed over (a case set, an
  examples file): every non-blank line must be JSON, and the first bad one
  raises the caller's error class naming ``file:line`` and the parser's reason
  (read through :mod:`harness.userfiles`: size cap, UTF-8, bounded nesting);
- :func:`finished_records` for append-only results files the project writes
  itself as each item finishes: only finished lines (ending in a line break) are
  read, so a line torn by a killed run is skipped and the run does that item
  again; the file is read bounded (``MAX_LINES_BYTES``) and a finished line that
  is not UTF-8 (a damaged or binary file) is an error naming ``file:line``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.userfiles import MAX_LINES_BYTES, InputFileError, parse_json, read_text


def split_lines(text: str) -> list[str]:
    """The lines of JSON Lines text, ending at \n, \r\n or \r only (without the line end).

    str.splitlines() also cuts at U+2028 and friends, which json.dumps(ensure_ascii=False)
    leaves raw inside strings, so a record would be split in two."""
    return [line.removesuffix("\n") for line in io.StringIO(text, newline=None)]


def jsonl_records(
    path: str | Path, *, error: type[Exception] = ValueError, text: str | None = None
) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of ``path`` (or of ``text``, named as
    ``path``).

    A line that is not JSON raises ``error("PATH:LINE: not valid JSON (REASON)")``; a file
    that is missing, too large or not UTF-8 raises ``error`` naming the file too.
    """
    if text is None:
        text = read_text(path, what="JSON Lines file", max_bytes=MAX_LINES_BYTES, error=error)
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        yield (
            number,
            parse_json(line, source=str(path), line=number, what="JSON Lines record", error=error),
        )


def finished_lines(
    path: str | Path, *, what: str = "results file", error: type[Exception] = InputFileError
) -> list[tuple[int, Any]]:
    """``(line number, record)`` of each finished JSON line of an append-only results file; [] when
    it does not exist yet. A last line without its line break (torn by a kill) is not read; a
    finished line that is not JSON (a torn line a resumed run appended to) is skipped, its item runs
    again. ``error`` names ``file:line`` for a file over MAX_LINES_BYTES or a finished line that is
    not UTF-8."""
    path = Path(path)
    if not path.is_file():
        return []
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_LINES_BYTES + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > MAX_LINES_BYTES:
        raise error(f"{path}: larger than {MAX_LINES_BYTES >> 20} MiB, the most a {what} may hold")
    finished = data[: data.rfind(b"\n") + 1]
    records = []
    for number, raw in enumerate(finished.split(b"\n")[:-1], start=1):
        try:
            line = raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError as exc:
            raise error(
                f"{path}:{number}: not UTF-8 text ({exc.reason} "
                f"at byte {exc.start} of the line); a "
                f"{what} holds JSON Lines (is this the file written by the run?)"
            ) from None
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except (json.JSONDecodeError, RecursionError):
            continue  # a line torn by a kill that a resumed run appended to; its item runs again
    return records


def finished_records(
    path: str | Path, *, what: str = "results file", error: type[Exception] = InputFileError
) -> list[Any]:
    """The finished records of an append-only results file (``finished_lines`` without line
    numbers)."""
    return [record for _number, record in finished_lines(path, what=what, error=error)]
