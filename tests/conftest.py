"""Shared test setup: the whole suite runs offline, on the tiny model."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Instruction-following prompts: the default a clone has (the project's generated set), never a file
# beside the checkout; a setting on the machine running the tests must not change what they score.
os.environ.pop("HARNESS_IFEVAL_PATH", None)

# Under pytest-xdist each worker is one process on one core: one torch/OpenMP thread per worker (and
# per process it starts), so that two workers never fight over the two cores of a CI machine.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(_name, "1")


@pytest.fixture
def fake_openai():
    """A started fake OpenAI-compatible server (tests/fake_openai.py): ``.url``, ``.answers``, ``.requests``."""
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server


def pytest_collection_modifyitems(config, items):
    """Every browser or real-worker test is ``slow`` too (``-m "not slow"`` is the quick tier); and the
    files that hold slow tests run first, so that under ``-n 2 --dist loadfile`` the long files start
    at once and the short ones fill the gaps, instead of one long file running alone at the end."""
    for item in items:
        if item.get_closest_marker("browser") or item.get_closest_marker("services"):
            item.add_marker(pytest.mark.slow)
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: the order within a file is kept
