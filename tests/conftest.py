"""Shared test setup: the whole suite runs offline, on the tiny model."""

import json
import os
import shutil
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path

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


# State a test run must not share with the demo or an earlier run (a second run of the suite read
# the first's cache entries: the same version numbers hit them). Each run (each xdist worker) gets
# its own Redis cache namespace, run folders and llama.cpp prefix states; the worker processes it
# starts inherit them through the environment, and the run removes them when it ends. Django read
# its settings before this file (pytest-django): pytest_configure overrides them in this process.
RUN_ID = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
CACHE_PREFIX = f"studio-test-{RUN_ID}"
RUN_DIR = Path(tempfile.mkdtemp(prefix=f"hs-test-run-{RUN_ID}-"))
os.environ["HARNESS_CACHE_PREFIX"] = CACHE_PREFIX
os.environ["TRAINING_RUNS_DIR"] = str(RUN_DIR / "runs")
os.environ["HARNESS_PREFIX_STATES"] = str(RUN_DIR / "prefix-states")


def _own_run_settings() -> None:
    import copy

    from django.conf import settings
    from django.test import override_settings

    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["KEY_PREFIX"] = CACHE_PREFIX
    override_settings(
        CACHES=caches,
        CACHE_KEY_PREFIX=CACHE_PREFIX,
        TRAINING_RUNS_DIR=RUN_DIR / "runs",
    ).enable()  # for the whole run; fires setting_changed, so no cache connection keeps the old


def _forget_run_state() -> None:
    """Remove this run's cache keys (its workers' too) and folders."""
    shutil.rmtree(RUN_DIR, ignore_errors=True)
    url = os.environ.get("REDIS_URL", "")
    if not url:
        return
    try:
        import redis

        client = redis.Redis.from_url(url)
        keys = list(client.scan_iter(match=f"{CACHE_PREFIX}:*", count=1000))
        if keys:
            client.delete(*keys)
    except Exception:  # noqa: BLE001 - the keys expire with the cache's TIMEOUT anyway
        pass


def pytest_unconfigure(config):
    _forget_run_state()


@pytest.fixture(autouse=True)
def _no_job_quota(settings):
    """Tests start many jobs per persona that no worker takes (they stay queued), so the per-user
    job quota (JOB_QUOTA_PER_USER) is off in tests; tests/security/test_per_user_limits.py turns the
    default back on."""
    settings.JOB_QUOTA_PER_USER = 0


@pytest.fixture
def fake_openai():
    """A started fake OpenAI-compatible server (tests/fake_openai.py): ``.url``, ``.answers``,
    ``.requests``."""
    from tests.fake_openai import FakeOpenAI

    with FakeOpenAI() as server:
        yield server


# Each test's seconds (setup + call + teardown) on the 2-core CI machine, as a run with
# --store-durations wrote them (pytest-split's idea, without its dependency). They decide two
# things: a test recorded at SLOW_S or more is ``slow`` (the quick tier leaves it out), and the
# files run longest first. Refresh after adding or speeding up a long test:
#   bash scripts/test.sh --store-durations
DURATIONS = Path(__file__).with_name("durations.json")
SLOW_S = 2.0


def pytest_addoption(parser):
    parser.addoption(
        "--store-durations",
        action="store_true",
        help="write each test's seconds of this run into "
        f"{DURATIONS.name} (merged with the file's)",
    )


def _recorded() -> dict[str, float]:
    try:
        data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in data.items() if isinstance(v, (int, float))}
        if isinstance(data, dict)
        else {}
    )


def pytest_collection_modifyitems(config, items):
    """Every browser or real-worker test, and every test recorded at SLOW_S or more, is ``slow``
    (``-m "not slow"`` is the quick tier). Files run longest first (their recorded seconds, the
    files holding slow tests before the others): under ``-n 2 --dist loadfile
    --no-loadscope-reorder`` the long files start at once and the short ones fill the gaps, instead
    of one long file starting last and running alone at the end."""
    recorded = _recorded()
    seconds: dict = defaultdict(float)
    for item in items:
        took = recorded.get(item.nodeid, 0.0)
        seconds[item.path] += took
        if (
            item.get_closest_marker("browser")
            or item.get_closest_marker("services")
            or took >= SLOW_S
        ):
            item.add_marker(pytest.mark.slow)
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    # stable, and one key per file: a file's tests stay together and in their order
    items.sort(key=lambda item: (item.path not in slow_files, -seconds[item.path]))


class _DurationRecorder:
    """Sums each test's phases as the reports arrive (under xdist, at the controller) and merges
    them into DURATIONS when the session ends."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report) -> None:
        self.seconds[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session) -> None:
        if self.seconds:
            merged = {**_recorded(), **{k: round(v, 2) for k, v in self.seconds.items()}}
            DURATIONS.write_text(
                json.dumps(dict(sorted(merged.items())), indent=0) + "\n", encoding="utf-8"
            )


#: Rows Django's post_migrate handlers write back after every flush (one per model and
#: permission); no test or app writes them, so the flush below keeps them instead of deleting and
#: re-inserting the same rows.
_KEPT_BY_FLUSH = frozenset({"django_content_type", "auth_permission"})


def _flush_by_delete() -> None:
    """A transactional test (``transaction=True``, a live server, a real worker) ends with Django's
    flush of every table; on PostgreSQL that is one ``TRUNCATE`` of the ~80 tables, which makes
    new files for each table and index and took 1.5-3 s per test here. The tables a test leaves
    hold a few rows, so ``DELETE FROM`` each (the foreign keys Django makes are deferrable: checked
    at the commit, when every table is empty) empties the same tables in a fraction of that.
    Sequences are left as TRUNCATE without RESTART IDENTITY leaves them; a flush that resets them
    (``reset_sequences``) keeps Django's own statement. The content types and permissions stay
    (``_KEPT_BY_FLUSH``): post_migrate, which the flush runs next, finds them all and has nothing
    to insert. (SQLite's flush is DELETE already.)"""
    from django.conf import settings

    if not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    # the backend's base module first: its operations module and it import each other
    from django.db.backends.postgresql.base import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        if reset_sequences or not tables:
            return truncate(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        return ["SET CONSTRAINTS ALL DEFERRED;"] + [
            f"DELETE FROM {self.quote_name(table)};"
            for table in tables
            if table not in _KEPT_BY_FLUSH
        ]

    DatabaseOperations.sql_flush = sql_flush


def pytest_configure(config):
    _own_run_settings()
    _flush_by_delete()
    if config.getoption("store_durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_DurationRecorder(), "hs-duration-recorder")


@pytest.fixture
def loopback_is_public(monkeypatch):
    """For tests whose fake OpenAI-compatible server on 127.0.0.1 stands for a server elsewhere
    (a vendor's, an attacker's): the endpoints' loopback/private-address rule (issue 50) sees a
    public host here (``studio.endpoints.services.url_private_addresses``), so that an ML engineer
    may register it as they would the real one; and since a real worker (its own process) checks
    the address again, each endpoint saved meanwhile is marked as an admin's.
    tests/security/test_model_call_targets.py tests the rule itself."""
    from django.db.models.signals import post_save

    from studio.endpoints.models import ModelEndpoint

    def as_admins(sender, instance, **kwargs):
        ModelEndpoint.objects.filter(pk=instance.pk).update(saved_by_admin=True)

    monkeypatch.setattr("studio.endpoints.services.url_private_addresses", lambda url: [])
    post_save.connect(as_admins, sender=ModelEndpoint, dispatch_uid="loopback_is_public")
    yield
    post_save.disconnect(sender=ModelEndpoint, dispatch_uid="loopback_is_public")
