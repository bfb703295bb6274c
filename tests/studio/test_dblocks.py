"""SQLite under several writing processes: the connection's options and the retry of a locked
statement."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError

from studio.dblocks import retry_when_locked

ROOT = Path(__file__).resolve().parents[2]


class _Connection:
    def __init__(self, in_atomic_block: bool) -> None:
        self.in_atomic_block = in_atomic_block


def _failing(times: int, message: str = "database is locked"):
    calls = []

    def execute(sql, params, many, context):
        calls.append(sql)
        if len(calls) <= times:
            raise OperationalError(message)
        return "done"

    return execute, calls


def test_a_locked_statement_outside_a_transaction_is_run_again_until_the_lock_is_gone(settings):
    settings.DB_LOCK_RETRY_S = 5
    execute, calls = _failing(3)
    assert (
        retry_when_locked(
            execute, "BEGIN IMMEDIATE", None, False, {"connection": _Connection(False)}
        )
        == "done"
    )
    assert len(calls) == 4


def test_a_lock_inside_a_transaction_another_error_or_a_lock_past_the_limit_is_raised(settings):
    settings.DB_LOCK_RETRY_S = 0.2
    execute, calls = _failing(1)
    with pytest.raises(
        OperationalError, match="database is locked"
    ):  # only its caller can start it over
        retry_when_locked(execute, "UPDATE x", None, False, {"connection": _Connection(True)})
    assert len(calls) == 1
    execute, calls = _failing(1, "no such table: x")
    with pytest.raises(OperationalError, match="no such table"):
        retry_when_locked(execute, "UPDATE x", None, False, {"connection": _Connection(False)})
    execute, calls = _failing(100)
    with pytest.raises(OperationalError, match="database is locked"):
        retry_when_locked(execute, "UPDATE x", None, False, {"connection": _Connection(False)})
    assert 2 <= len(calls) <= 6  # 0.05 + 0.1 + 0.2 s of backoff


@pytest.mark.slow  # two Django processes
def test_every_process_on_a_sqlite_url_takes_the_write_lock_when_a_transaction_begins(tmp_path):
    """The workers reach SQLite through DATABASE_URL (scripts/demo.sh's layout,
    studio.jobs.testing), the web server through the default: both open the file in WAL mode with
    IMMEDIATE transactions."""
    probe = (
        "import django, json; django.setup(); from django.db import connection; "
        "connection.ensure_connection(); options = connection.settings_dict['OPTIONS']; "
        "mode = connection.cursor().execute('PRAGMA journal_mode').fetchone()[0]; "
        "print(json.dumps([options.get('transaction_mode'), mode, options.get('timeout'), "
        "'retry_when_locked' in [w.__name__ for w in connection.execute_wrappers]]))"
    )
    for url in (f"sqlite:///{tmp_path / 'studio.sqlite3'}", None):
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "studio.settings",
            "PYTHONPATH": str(ROOT),
            "HARNESS_STUDIO_VAR": str(tmp_path / "var"),
        }
        env.pop("DATABASE_URL", None)
        if url:
            env["DATABASE_URL"] = url
        out = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        assert json.loads(out.stdout.splitlines()[-1]) == ["IMMEDIATE", "wal", 30, True], url
