#!/usr/bin/env bash
# Sets up everything and runs the whole test suite: lint, then pytest on
# PostgreSQL with a real redis-server broker and headless Debian chromium.
# HS_TEST_DB=sqlite runs it on the zero-setup SQLite default instead.
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
echo "[test] ruff check"
ruff check .
echo "[test] pytest (database: ${DATABASE_URL:-sqlite})"
set +e
python -m pytest "$@"
rc=$?
set -e
# pytest's 5 means no test ran: that is a failure of the suite, not a pass.
exit $rc
