"""Key files made once per checkout: written whole under a private name (mode 0600) and linked into
place, so that when two processes start at once the first one's key wins and nobody reads half a
key.

Imported by ``studio/settings.py`` (its secret key) as well as by the apps (endpoint secrets,
release signing), so it needs nothing of Django.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def create_once(path: Path, content: bytes) -> None:
    """Write ``content`` to ``path`` readable by its owner only, unless ``path`` exists (then keep
    it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, draft = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")  # mode 0600
    with os.fdopen(handle, "wb") as out:
        out.write(content)
    try:
        os.link(draft, path)  # atomic: when two processes start at once, the first key wins
    except FileExistsError:
        pass
    finally:
        os.unlink(draft)
