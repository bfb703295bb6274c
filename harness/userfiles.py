"""Reading the files a user hands to the CLIs: bounded, and every failure names the file.

A request, a catalogue, a scripted policy's script, a demonstration
trajectory, a config or a case set is read with :func:`read_text` (a size
cap, UTF-8) and, when it is JSON, parsed with :func:`parse_json` (nesting
bounded, so a hostile file cannot exhaust the stack of every validator that
walks it), refusing a lone surrogate (``"\\ud800"``) and anything but a regular file (a FIFO would
block). A failure raises the caller's error class (default
:class:`InputFileError`) with one line, ``FILE[:LINE[:COLUMN]]: what is
wrong``, which a CLI prints before exiting 2 instead of showing a traceback.
``harness.jsonl`` reads JSON Lines through the same two functions.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
"""A request, catalogue, script, trajectory or config: far above any real one."""
MAX_LINES_BYTES = 256 * 1024 * 1024
"""A JSON Lines file (case set, training examples)."""
MAX_JSON_DEPTH = 64
"""Nested arrays/objects; the project's deepest documents (trajectories) use about 8."""


class InputFileError(ValueError):
    """A file could not be read as the text or JSON it should hold; the message names it.

    ``reason`` is the message without its ``FILE:LINE:`` head, for callers that list
    problems per line themselves.
    """

    def __init__(self, message: str, *, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


def _fail(error: type[Exception], where: str, reason: str) -> Exception:
    message = f"{where}: {reason}"
    if isinstance(error, type) and issubclass(error, InputFileError):
        return error(message, reason=reason)
    return error(message)


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB"


def read_text(
    path: str | Path,
    *,
    what: str = "file",
    max_bytes: int = MAX_DOCUMENT_BYTES,
    error: type[Exception] = InputFileError,
) -> str:
    """The UTF-8 text of ``path``; at most ``max_bytes`` are read.

    ``what`` names the file's role in messages ("request file", "catalogue").
    """
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; only a regular file is read
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise IsADirectoryError
            if not stat.S_ISREG(mode):
                raise _fail(
                    error,
                    str(path),
                    f"is not a regular file (a FIFO, socket or device); expected a {what}",
                )
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise _fail(error, str(path), f"no such {what}") from None
    except IsADirectoryError:
        raise _fail(error, str(path), f"is a directory; expected a {what}") from None
    except OSError as exc:
        raise _fail(error, str(path), f"cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise _fail(error, str(path), f"larger than {_size(max_bytes)}, the most a {what} may hold")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise _fail(
            error,
            f"{path}:{line}",
            f"not UTF-8 text ({exc.reason} at byte {exc.start}); a {what} must be UTF-8 text",
        ) from None


def parse_json(
    text: str,
    *,
    source: str,
    line: int | None = None,
    what: str = "file",
    max_depth: int = MAX_JSON_DEPTH,
    error: type[Exception] = InputFileError,
) -> Any:
    """The JSON value of ``text`` (read from ``source``; ``line`` for one line of JSON Lines).

    Raises ``error("SOURCE:LINE[:COLUMN]: not valid JSON (REASON)")``, or a
    message naming the nesting limit when arrays/objects nest deeper than ``max_depth``.
    """
    where = f"{source}:{line}" if line is not None else source
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        if line is not None:
            raise _fail(error, where, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        hint = (
            "; the file ends before the JSON is complete" if exc.pos >= len(text.rstrip()) else ""
        )
        raise _fail(
            error, f"{where}:{exc.lineno}:{exc.colno}", f"not valid JSON ({exc.msg}){hint}"
        ) from None
    except RecursionError:
        raise _fail(error, where, _too_deep(what, max_depth)) from None
    except ValueError as exc:  # e.g. an integer with more digits than Python converts
        raise _fail(error, where, f"not valid JSON ({exc})") from None
    problem = _shape_problem(value, max_depth, what)
    if problem:
        raise _fail(error, where, problem)
    return value


def read_json(
    path: str | Path,
    *,
    what: str = "file",
    max_bytes: int = MAX_DOCUMENT_BYTES,
    error: type[Exception] = InputFileError,
) -> Any:
    """The JSON value of the file ``path`` (bounded size and nesting)."""
    text = read_text(path, what=what, max_bytes=max_bytes, error=error)
    return parse_json(text, source=str(path), what=what, error=error)


def _too_deep(what: str, max_depth: int) -> str:
    return f"JSON arrays/objects nest deeper than {max_depth} levels, the most a {what} may"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _shape_problem(value: Any, limit: int, what: str) -> str | None:
    """Nesting deeper than ``limit``, or a string or key holding a lone surrogate (JSON's
    ``"\\ud800"`` escape without its pair: not a character, so printing or storing it fails later),
    named by its path."""
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return (
                    f"{where or '(top level)'}: holds a lone "
                    "surrogate (a \\ud800-\\udfff escape without its "
                    "pair), which is not a Unicode character; write the character itself"
                )
            continue
        if isinstance(item, dict):
            children = []
            for key, child in item.items():
                if _SURROGATE.search(key):
                    return (
                        f"{where or '(top level)'}: a key holds a "
                        "lone surrogate (a \\ud800-\\udfff escape "
                        "without its pair), which is not a Unicode character"
                    )
                children.append((child, f"{where}.{key}" if where else key))
        elif isinstance(item, list):
            children = [(child, f"{where}[{i}]") for i, child in enumerate(item)]
        else:
            continue
        if depth > limit:
            return _too_deep(what, limit)
        stack.extend((child, depth + 1, path) for child, path in children)
    return None
