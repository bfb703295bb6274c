"""A test run does not see what an earlier run (or the demo) left in shared state: the Redis cache
(``REDIS_URL``, shared by the demo and every run), the studio's run folders and the llama.cpp
prefix states (tests/conftest.py). Two whole test runs of ``tests/isolation/probe.py`` in the same
environment: the second finds nothing of the first's, and the first's keys and folders are gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _probe_run() -> dict:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "tests/isolation/probe.py",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("PROBE "))
    return json.loads(line.removeprefix("PROBE "))


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="the shared cache is Redis")
def test_a_second_test_run_does_not_see_the_first_runs_cache_entries_or_folders():
    import redis
    from django.conf import settings

    first, second = _probe_run(), _probe_run()
    assert first["backend"] == second["backend"] == "RedisCache"
    assert second["seen"] == {"cache": None, "run_folder": False, "prefix_states": False}
    # each run its own namespace, none of them the demo's (studio/settings.py's default)
    assert first["prefix"] != second["prefix"]
    assert "studio-cache" not in (first["prefix"], second["prefix"], settings.CACHE_KEY_PREFIX)
    # and what the first run left is gone: nothing accumulates in Redis or on disk
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    assert not list(client.scan_iter(match=f"{first['prefix']}:*"))
    assert not any(Path(path).exists() for path in first["paths"])
