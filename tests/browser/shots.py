"""Screenshots a browser test takes of the pages it walked, for a person to look at (never
compared): saved under ``HS_SHOTS_DIR`` when that is set, and not taken otherwise (a full-page
screenshot is a fraction of a second of chromium's time that no check reads)."""

from __future__ import annotations

import os
from pathlib import Path


def shot(page, name: str, *, full_page: bool = True) -> None:
    """Save ``page`` as ``HS_SHOTS_DIR/<name>.png`` when HS_SHOTS_DIR is set."""
    folder = os.environ.get("HS_SHOTS_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=full_page)
