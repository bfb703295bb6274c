"""The one in-process cache of what the studio computes from files (curves, a replay's figures, an
ablation table, a loaded Harness bundle).

A web process serves requests from several threads and reads the same run folders again on every
poll, so each such value is computed once per change of the files it came from: the key holds
what the value depends on (``file_stats``: each file's inode, size and modification time, read
without opening it), and a changed file is a new key. The cache is bounded (least recently used out
first) and thread-safe; a value is computed outside the lock, so two threads asking for the same
new key at once may each compute it once, and no thread waits on another's computation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
_MISSING = object()


class FileCache:
    """A bounded, thread-safe mapping of keys to computed values, least recently used out first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            value = self._items.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: T) -> T:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The kept value of ``key``, else ``compute()`` kept under it."""
        value = self.get(key, _MISSING)
        return self.put(key, compute()) if value is _MISSING else value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items


def file_stats(*paths: Path) -> tuple[tuple, ...]:
    """What a value computed from ``paths`` depends on: (path, inode, size, mtime in ns) for each file,
    (path,) for one that does not exist or cannot be read."""
    out = []
    for path in paths:
        try:
            stat = Path(path).stat()
        except OSError:
            out.append((str(path),))
            continue
        out.append((str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(out)
