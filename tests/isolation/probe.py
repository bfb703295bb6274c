"""Run by tests/isolation/test_run_isolation.py as a test run of its own (``pytest
tests/isolation/probe.py``; pytest collects no file of this name by itself): it reads and writes a
cache key, a run folder and a prefix state folder every run names alike, and prints what an earlier
run left there."""

from __future__ import annotations

import json
import os
from pathlib import Path

KEY = "run-isolation-probe"


def test_probe():
    from django.conf import settings
    from django.core.cache import caches

    cache = caches["default"]
    runs = Path(settings.TRAINING_RUNS_DIR) / "run-1"
    from serving.prefix_state import state_dir

    states = state_dir() / "run-isolation-probe"
    seen = {
        "cache": cache.get(KEY),
        "run_folder": runs.is_dir(),
        "prefix_states": states.is_dir(),
    }
    cache.set(KEY, os.getpid())
    runs.mkdir(parents=True, exist_ok=True)
    states.mkdir(parents=True, exist_ok=True)
    report = {
        "seen": seen,
        "backend": settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1],
        "prefix": settings.CACHES["default"].get("KEY_PREFIX", ""),
        "key": cache.make_key(KEY),
        "paths": [str(runs), str(states)],
    }
    print("PROBE " + json.dumps(report))
