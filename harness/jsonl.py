"""Reading JSON Lines files: case sets, examples, trajectories, per-item results.

Two readers, for the two kinds of file the project keeps:

- :func:`jsonl_records` for files a person wrote or handed over (a case set, an
  examples file): every non-blank line must be JSON, and the first bad one
  raises the caller's error class naming ``file:line`` and the parser's reason
  (read through :mod:`harness.userfiles`: size cap, UTF-8, bounded nesting);
- :func:`finished_records` for append-only results files the project writes
  itself as each item finishes: a line torn by a killed run is skipped, so the
  run resumes and does that item again.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.userfiles import MAX_LINES_BYTES, parse_json, read_text


def split_lines(text: str) -> list[str]:
    """The lines of JSON Lines text, ending at \n, \r\n or \r only (without the line end).

    str.splitlines() also cuts at U+2028 and friends, which json.dumps(ensure_ascii=False)
    leaves raw inside strings, so a record would be split in two."""
    return [line.removesuffix("\n") for line in io.StringIO(text, newline=None)]


def jsonl_records(path: str | Path, *, error: type[Exception] = ValueError,
                  text: str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` for each non-blank line of ``path`` (or of ``text``, named as ``path``).

    A line that is not JSON raises ``error("PATH:LINE: not valid JSON (REASON)")``; a file
    that is missing, too large or not UTF-8 raises ``error`` naming the file too.
    """
    if text is None:
        text = read_text(path, what="JSON Lines file", max_bytes=MAX_LINES_BYTES, error=error)
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        yield number, parse_json(line, source=str(path), line=number, what="JSON Lines record", error=error)


def finished_records(path: str | Path) -> list[Any]:
    """The complete records of an append-only results file; [] when it does not exist yet."""
    path = Path(path)
    if not path.is_file():
        return []
    records = []
    for line in split_lines(path.read_text(encoding="utf-8")):
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill; its item runs again
    return records
