"""A statement that meets a locked SQLite database is run again with backoff, never turned into an
error.

SQLite has one writer at a time. The settings make every transaction take the write lock when it
begins and wait for it up to the busy timeout (studio/settings.py); what is left is a lock held
longer than that, or the rare busy answer SQLite gives without waiting (WAL recovery, a checkpoint).
Such a statement is retried here, for up to ``DB_LOCK_RETRY_S`` seconds, when it can be run again on
its own: outside a transaction (autocommit: the statement is its whole transaction) or as the
``BEGIN`` that opens one. A statement inside a transaction is not (that transaction would have to
start over, which only its caller can do); with IMMEDIATE transactions it holds the lock already and
does not meet one.

So a job's progress, heartbeat and result writes, a scored case and a web save wait for the other
process's write instead of failing the job or answering 500. PostgreSQL is untouched.

A unit of work that is safe to run again (its writes find what an earlier try wrote) can be run
again whole when a lock still ends it inside a transaction: ``run_again_when_locked``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import OperationalError

logger = logging.getLogger(__name__)
T = TypeVar("T")

LOCKED = ("database is locked", "database table is locked")
FIRST_WAIT_S = 0.05
LONGEST_WAIT_S = 2.0


def is_locked(error: BaseException) -> bool:
    return isinstance(error, OperationalError) and any(text in str(error) for text in LOCKED)


def retry_when_locked(execute, sql, params, many, context):
    """A ``connection.execute_wrapper``: run the statement, again after a growing wait while SQLite
    is locked."""
    connection = context["connection"]
    wait_s, waited_s, attempt = FIRST_WAIT_S, 0.0, 0
    while True:
        try:
            return execute(sql, params, many, context)
        except OperationalError as error:
            if (
                not is_locked(error)
                or connection.in_atomic_block
                or waited_s >= settings.DB_LOCK_RETRY_S
            ):
                raise
            attempt += 1
            logger.warning(
                "SQLite locked by another process's write (%s); statement retried in %.2f s "
                "(attempt %d): %.80s",
                error,
                wait_s,
                attempt,
                sql,
            )
            time.sleep(wait_s)
            waited_s += wait_s
            wait_s = min(wait_s * 2, LONGEST_WAIT_S)


def install(sender, connection, **_kwargs) -> None:
    """``connection_created`` receiver: SQLite connections retry locked statements."""
    if connection.vendor == "sqlite" and retry_when_locked not in connection.execute_wrappers:
        connection.execute_wrappers.append(retry_when_locked)


def run_again_when_locked(
    work: Callable[[], T], *, what: str, log: Callable[[str], None] | None = None
) -> T:
    """``work()``, run again after a growing wait while it fails on a locked SQLite database, for up
    to ``DB_LOCK_RETRY_S`` seconds; ``work`` must be safe to run again (idempotent writes)."""
    wait_s, waited_s = FIRST_WAIT_S, 0.0
    while True:
        try:
            return work()
        except OperationalError as error:
            if not is_locked(error) or waited_s >= settings.DB_LOCK_RETRY_S:
                raise
            (log or logger.warning)(
                f"{what}: the database was locked by another process's write ({error}); "
                f"trying again in {wait_s:.2f} s"
            )
            time.sleep(wait_s)
            waited_s += wait_s
            wait_s = min(wait_s * 2, LONGEST_WAIT_S)
