"""The one in-process cache of values computed from files (studio.filecache)."""

from __future__ import annotations

import threading

from studio.filecache import FileCache, file_stats


def test_a_value_is_computed_once_per_change_of_its_files(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("one\n")
    cache, computed = FileCache(4), []

    def read():
        computed.append(1)
        return path.read_text()

    assert cache.get_or_compute(file_stats(path), read) == "one\n"
    assert cache.get_or_compute(file_stats(path), read) == "one\n" and len(computed) == 1
    path.write_text("one\ntwo\n")
    assert cache.get_or_compute(file_stats(path), read) == "one\ntwo\n" and len(computed) == 2


def test_a_missing_file_is_a_key_of_its_own():
    assert file_stats(__import__("pathlib").Path("/nonexistent/x")) == (("/nonexistent/x",),)


def test_the_least_recently_used_goes_first():
    cache = FileCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3 and len(cache) == 2


def test_threads_sharing_one_cache_keep_it_bounded_and_consistent():
    cache, errors = FileCache(8), []

    def work(worker: int) -> None:
        try:
            for i in range(2000):
                key = (worker + i) % 20
                assert cache.get_or_compute(key, lambda key=key: key * 10) == key * 10
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and len(cache) <= 8
