"""Values computed from files, kept in Django's cache framework (studio.filecache,
settings.CACHES)."""

from __future__ import annotations

import threading
from pathlib import Path

from django.conf import settings
from django.core.cache import caches

from studio.filecache import FileCache, file_stats


def test_a_value_is_computed_once_per_change_of_its_files(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("one\n")
    cache, computed = FileCache("test-once"), []

    def read():
        computed.append(1)
        return path.read_text()

    assert cache.get_or_compute(file_stats(path), read) == "one\n"
    assert cache.get_or_compute(file_stats(path), read) == "one\n" and len(computed) == 1
    path.write_text("one\ntwo\n")
    assert cache.get_or_compute(file_stats(path), read) == "one\ntwo\n" and len(computed) == 2


def test_a_missing_file_is_a_key_of_its_own():
    assert file_stats(__import__("pathlib").Path("/nonexistent/x")) == (("/nonexistent/x",),)


def test_values_live_in_the_configured_django_cache_under_their_name(tmp_path):
    """One cache for the studio: a second FileCache of the same name (another module, or on Redis
    another process) sees the value; another name or the process-local alias does not."""
    shared, again, other = (
        FileCache("test-shared"),
        FileCache("test-shared"),
        FileCache("test-other"),
    )
    local = FileCache("test-shared", alias="local")
    shared.put(("a", 1), {"x": [1, 2]})
    assert again.get(("a", 1)) == {"x": [1, 2]} and ("a", 1) in again
    assert other.get(("a", 1)) is None and local.get(("a", 1), "none") == "none"
    assert caches["default"].get(shared.key(("a", 1))) == {"x": [1, 2]}
    assert settings.CACHES["local"]["BACKEND"].endswith("LocMemCache")


def test_the_settings_choose_redis_only_when_redis_url_is_set():
    import os
    import subprocess
    import sys

    script = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CACHES['default']['BACKEND'].rsplit('.', 1)[-1])"
    )
    for url, backend in (("", "LocMemCache"), ("redis://127.0.0.1:1/0", "RedisCache")):
        env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | (
            {"REDIS_URL": url} if url else {}
        )
        done = subprocess.run(
            [sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).resolve().parents[2],
            env=env | {"DJANGO_SETTINGS_MODULE": "studio.settings"},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip().splitlines()[-1] == backend


def test_threads_sharing_one_cache_read_consistent_values():
    cache, errors = FileCache("test-threads", alias="local"), []

    def work(worker: int) -> None:
        try:
            for i in range(500):
                key = (worker + i) % 20
                assert cache.get_or_compute(key, lambda key=key: key * 10) == key * 10
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
