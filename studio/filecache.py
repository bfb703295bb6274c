"""What the studio computes from files (curves, a replay's figures, an ablation table, a loaded
Harness bundle), kept in Django's cache framework (``settings.CACHES``).

A web process serves requests from several threads and reads the same run folders again on every
poll, so each such value is computed once per change of the files it came from: the key holds
what the value depends on (``file_stats``: each file's inode, size and modification time, read
without opening it), and a changed file is a new key. ``FileCache(name)`` keeps its values in the
``default`` cache (Redis when ``REDIS_URL`` is set, so every web process and worker shares them;
local memory otherwise); ``alias="local"`` keeps them in this process's memory, for values only
worth keeping beside the code that reads them (a metrics file's parsed columns, a loaded bundle).
The backend bounds them (``MAX_ENTRIES``, least recently used out first on local memory). A value is
computed outside any lock: two threads asking for the same new key at once may each compute it once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
_MISSING = object()


class FileCache:
    """Values under keys of one name in one of Django's caches (``alias``), kept until evicted."""

    def __init__(self, name: str, *, alias: str = "default") -> None:
        self.name = name
        self.alias = alias

    @property
    def backend(self):
        from django.core.cache import caches

        return caches[self.alias]

    def key(self, key: Hashable) -> str:
        """The cache key of ``key``: any hashable whose repr says what the value depends on."""
        return f"filecache:{self.name}:{hashlib.sha256(repr(key).encode()).hexdigest()}"

    def get(self, key: Hashable, default: Any = None) -> Any:
        value = self.backend.get(self.key(key), _MISSING)
        return default if value is _MISSING else value

    def put(self, key: Hashable, value: T) -> T:
        self.backend.set(
            self.key(key), value
        )  # the alias's TIMEOUT: none on local memory, a week on Redis
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The kept value of ``key``, else ``compute()`` kept under it."""
        value = self.get(key, _MISSING)
        return self.put(key, compute()) if value is _MISSING else value

    def __contains__(self, key: Hashable) -> bool:
        return self.backend.has_key(self.key(key))


def file_stats(*paths: Path) -> tuple[tuple, ...]:
    """What a value computed from ``paths`` depends on: (path, inode, size, mtime in ns) for each
    file, (path,) for one that does not exist or cannot be read."""
    out = []
    for path in paths:
        try:
            stat = Path(path).stat()
        except OSError:
            out.append((str(path),))
            continue
        out.append((str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return tuple(out)
