"""A real Celery worker in a subprocess, for tests and benchmarks that need one.

The worker shares the caller's database (the test database included) and
listens on its own queue, so it never takes tasks meant for another worker
on the same Redis.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def redis_url() -> str:
    """REDIS_URL from the environment, else the one scripts/services.sh starts and prints."""
    if os.environ.get("REDIS_URL"):
        return os.environ["REDIS_URL"]
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "services.sh")], capture_output=True, text=True, check=True
    ).stdout
    for line in out.splitlines():
        if line.startswith("export REDIS_URL="):
            return line.split("=", 1)[1].strip()
    raise RuntimeError(f"scripts/services.sh printed no REDIS_URL: {out!r}")


def current_database_url() -> str:
    """A DATABASE_URL for the database this process is connected to (the test DB in tests)."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    if db["ENGINE"].endswith("postgresql"):
        auth = f"{db['USER']}:{db['PASSWORD']}@" if db.get("USER") else ""
        host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
        return f"postgres://{auth}{host}:{port}/{db['NAME']}"
    raise RuntimeError(f"no URL form for database engine {db['ENGINE']}")


class WorkerProcess:
    def __init__(self, process: subprocess.Popen, queue: str, log_path: Path, node: str = ""):
        self.process, self.queue, self.log_path, self.node = process, queue, log_path, node or queue

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


@contextmanager
def celery_worker(
    *,
    queue: str | None = None,
    heartbeat_s: float = 0.3,
    lease_s: float = 2.0,
    extra_env: dict | None = None,
    node: str | None = None,
    also_queues: tuple[str, ...] = (),
    processes: int | None = None,
    beat: bool = False,
    follow_on_queue: str | None = None,
    route_here: bool = True,
) -> Iterator[WorkerProcess]:
    """Start `celery worker --pool solo` on a private queue; route this process's tasks there too.

    Several workers share a queue when given the same ``queue`` and each its own ``node`` name (the
    worker's node is ``<node>@<host>``; ``node`` defaults to the queue). ``also_queues``: more
    queues the worker reads (a test's private train queue, ``CELERY_TRAIN_QUEUE``). ``processes``:
    the prefork pool with that many worker processes instead of solo, and ``beat`` the beat schedule
    beside them, as ``scripts/demo.sh`` starts its worker. ``follow_on_queue``: where follow-on jobs
    go (``CELERY_FOLLOW_ON_QUEUE``, in the worker and in this process); by default the worker's own
    queue, so one worker takes everything. ``route_here=False`` starts a worker without sending this
    process's tasks to it: a second worker beside one that does (a follow-on worker reading
    ``follow_on_queue``, as ``scripts/demo.sh`` starts one).
    """
    from django.test import override_settings

    from studio.celery import app

    queue = queue or f"test-{uuid.uuid4().hex[:8]}"
    node = node or queue
    log_dir = Path(settings.VAR_DIR) / "log"
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"worker-{node}.log"
    env = {
        **os.environ,
        "DATABASE_URL": current_database_url(),
        "REDIS_URL": redis_url(),
        "CELERY_QUEUE": queue,
        "CELERY_FOLLOW_ON_QUEUE": follow_on_queue or queue,
        "JOB_HEARTBEAT_S": str(heartbeat_s),
        "JOB_LEASE_S": str(lease_s),
        "PYTHONPATH": str(ROOT),
        **(extra_env or {}),
    }
    pool = (
        ["--pool", "solo"]
        if processes is None
        else ["--pool", "prefork", "--concurrency", str(processes)]
    )
    if beat:
        pool += ["--beat", "--schedule", str(log_dir / f"beat-{node}")]
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "studio",
        "worker",
        *pool,
        "--queues",
        ",".join((queue, *also_queues)),
        "--hostname",
        f"{node}@%h",
        "--without-gossip",
        "--without-mingle",
        "--loglevel",
        "INFO",
        # config after "--": the broker's idle poll (Redis BRPOP) returns every 0.1 s instead of
        # every 1 s, so that a stopped worker begins its warm shutdown at once instead of up to a
        # second later (tasks arrive as fast either way)
        "--",
        'broker.transport_options=(json){"polling_interval": 0.1}',
    ]
    with open(log_path, "w") as log_file:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT
        )
    worker = WorkerProcess(process, queue, log_path, node)
    previous = (app.conf.broker_url, app.conf.task_default_queue, app.conf.task_always_eager)
    routing = override_settings(CELERY_FOLLOW_ON_QUEUE=follow_on_queue or queue)
    if route_here:
        app.conf.broker_url, app.conf.task_default_queue, app.conf.task_always_eager = (
            env["REDIS_URL"],
            queue,
            False,
        )
        routing.enable()
    try:
        deadline = time.monotonic() + 120
        while " ready." not in worker.log():
            if process.poll() is not None:
                raise RuntimeError(
                    f"the Celery worker exited with {process.returncode}:\n{worker.log()[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the Celery worker did not become ready in 120 s:\n{worker.log()[-3000:]}"
                )
            time.sleep(0.05)
        yield worker
    finally:
        if route_here:
            routing.disable()
            app.conf.broker_url, app.conf.task_default_queue, app.conf.task_always_eager = previous
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for schedule in log_dir.glob(
            f"beat-{node}*"
        ):  # the beat's schedule files (shelve: .dat, .dir, .bak)
            schedule.unlink(missing_ok=True)


def wait_for(predicate, *, timeout: float, what: str, interval: float = 0.05):
    """The first truthy value of ``predicate()``, polled until ``timeout`` seconds; AssertionError
    naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
