#!/usr/bin/env bash
# Starts the services Harness Studio uses, if they are not already up:
#   redis   - the Celery broker (always)
#   postgres - the production database (with the argument "postgres")
# Prints the environment to export, e.g.  eval "$(scripts/services.sh postgres)"
set -euo pipefail
cd "$(dirname "$0")/.."
# Only the export lines go to stdout, printed at the very end: everything the
# servers' own tools print (pg_ctlcluster says "Removed stale pid file.") goes
# to stderr, so that `eval "$(...)"` never runs a server's chatter as a command.
# The body runs with stdout sent to stderr, so the daemons it starts never hold
# the caller's `$(...)` pipe open: a daemon that inherited it would make the
# caller wait for ever (bash keeps its saved copy of fd 1 close-on-exec).
EXPORTS=()

start_services() {
mkdir -p var/redis var/log
REDIS_PORT=${REDIS_PORT:-6379}

if ! redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1; then
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --daemonize yes \
    --dir "$(pwd)/var/redis" --logfile "$(pwd)/var/log/redis.log" --save "" --appendonly no
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$REDIS_PORT" ping >/dev/null || { echo "redis-server did not start (var/log/redis.log)" >&2; exit 1; }
fi
EXPORTS+=("export REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0")

if [ "${1:-}" = postgres ]; then
  PGVER=$(ls /usr/lib/postgresql | sort -n | tail -1)
  if ! pg_lsclusters -h 2>/dev/null | grep -q "^$PGVER main"; then
    pg_createcluster "$PGVER" main >/dev/null
  fi
  if ! pg_lsclusters -h | grep -q "^$PGVER main .* online"; then
    pg_ctlcluster "$PGVER" main start
  fi
  for _ in $(seq 50); do su postgres -c "psql -qtAc 'select 1'" >/dev/null 2>&1 && break; sleep 0.2; done
  su postgres -c "psql -qtAc \"select 1 from pg_roles where rolname='harness'\"" | grep -q 1 \
    || su postgres -c "psql -qc \"create role harness login createdb password 'harness'\"" >/dev/null
  su postgres -c "psql -qtAc \"select 1 from pg_database where datname='harness_studio'\"" | grep -q 1 \
    || su postgres -c "createdb -O harness harness_studio"
  PGPORT=$(pg_lsclusters -h | awk -v v="$PGVER" '$1==v && $2=="main" {print $3}')
  EXPORTS+=("export DATABASE_URL=postgres://harness:harness@127.0.0.1:$PGPORT/harness_studio")
fi
}

start_services "$@" </dev/null >&2
printf '%s\n' "${EXPORTS[@]}"
