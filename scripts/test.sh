#!/usr/bin/env bash
# Sets up everything and runs the whole test suite: lint, then pytest on
# PostgreSQL with a real redis-server broker and headless Debian chromium.
# HS_TEST_DB=sqlite runs it on the zero-setup SQLite default instead; extra
# arguments go to pytest (`bash scripts/test.sh -m "not slow"`: the quick tier).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
if [ "${HS_TEST_DB:-postgres}" = postgres ]; then
  service_env=$(bash scripts/services.sh postgres)
  eval "$service_env"
else
  service_env=$(bash scripts/services.sh)
  eval "$service_env"
fi
export REDIS_URL DATABASE_URL
. .venv/bin/activate
echo "[test] ruff check, ruff format --check"
ruff check .
ruff format --check . >/dev/null || { ruff format --check .; echo "[test] run: ruff format ." >&2; exit 1; }
# Two pytest-xdist workers (one per core; each runs torch on one thread: tests/conftest.py), whole
# files to a worker so that a module's fixtures are built once, in the order tests/conftest.py gives them
# (longest first; xdist would otherwise reorder them by test count); HS_TEST_WORKERS=0 runs in one process.
workers=${HS_TEST_WORKERS:-2}
echo "[test] pytest (database: ${DATABASE_URL:-sqlite}, workers: $workers)"
set +e
if [ "$workers" = 0 ]; then
  python -m pytest "$@"
else
  python -m pytest -n "$workers" --dist loadfile --no-loadscope-reorder "$@"
fi
rc=$?
set -e
# pytest's 5 means no test ran: that is a failure of the suite, not a pass.
exit $rc
