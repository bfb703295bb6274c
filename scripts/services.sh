#!/usr/bin/env bash
# Starts the services Harness Studio uses, if they are not already up:
#   redis   - the Celery broker (always)
#   postgres - the production database (with the argument "postgres")
# Prints the environment to export, e.g.  eval "$(scripts/services.sh postgres)"
# Both listen on loopback only and get passwords generated once and kept in var/
# (var/redis.password, var/postgres.password; owner-only files in an owner-only
# folder), which the exported URLs carry; studio/settings.py reads
# var/redis.password too when REDIS_URL is not set.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 077
# Only the export lines go to stdout, printed at the very end: everything the
# servers' own tools print (pg_ctlcluster says "Removed stale pid file.") goes
# to stderr, so that `eval "$(...)"` never runs a server's chatter as a command.
# The body runs with stdout sent to stderr, so the daemons it starts never hold
# the caller's `$(...)` pipe open: a daemon that inherited it would make the
# caller wait for ever (bash keeps its saved copy of fd 1 close-on-exec).
EXPORTS=()

# password FILE: the password kept in FILE, made once (128 random bits as 32 hex digits: no URL escaping).
password() {
  if [ ! -s "$1" ]; then
    (umask 077; head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$1.new" && mv "$1.new" "$1")
  fi
  chmod 600 "$1"
  cat "$1"
}

start_services() {
mkdir -p var/redis var/log
chmod 700 var
REDIS_PORT=${REDIS_PORT:-6379}
REDIS_PASSWORD=$(password var/redis.password)
# redis-cli reads the password from REDISCLI_AUTH, so it never shows in `ps`.
ours() { REDISCLI_AUTH=$REDIS_PASSWORD redis-cli --no-auth-warning -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; }

REDIS_AUTH=":$REDIS_PASSWORD@"
# Asked without a password first: a Redis without one accepts any password, so `ours` alone would pass it.
if redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
  # Started by hand or by an older services.sh: used as it is (stopping it could cut off its other users),
  # and said loudly.
  echo "services.sh: WARNING: the Redis on port $REDIS_PORT has no password; any local user can read and" \
       "queue jobs. Stop it (redis-cli -p $REDIS_PORT shutdown nosave) and run this again to start it with" \
       "var/redis.password" >&2
  REDIS_AUTH=""
elif ours; then
  :
else
  # The password goes in an owner-only config file, not on redis-server's command line (`ps` shows that).
  printf 'port %s\nbind 127.0.0.1\nprotected-mode yes\nrequirepass %s\ndaemonize yes\ndir %s\nlogfile %s\nsave ""\nappendonly no\n' \
    "$REDIS_PORT" "$REDIS_PASSWORD" "$(pwd)/var/redis" "$(pwd)/var/log/redis.log" >var/redis/redis.conf
  redis-server var/redis/redis.conf
  for _ in $(seq 50); do ours && break; sleep 0.1; done
  if ! ours; then
    if redis-cli -p "$REDIS_PORT" ping 2>&1 | grep -q NOAUTH; then
      # Redis cannot be told a new password without the old one, as PostgreSQL's role can.
      echo "services.sh: a Redis with another password (another checkout's var/redis.password) already listens" \
           "on port $REDIS_PORT; copy that checkout's var/redis.password here, or set REDIS_PORT to a free port" >&2
    else
      echo "redis-server did not start on port $REDIS_PORT (var/log/redis.log)" >&2
    fi
    exit 1
  fi
fi
EXPORTS+=("export REDIS_URL=redis://${REDIS_AUTH}127.0.0.1:$REDIS_PORT/0")

if [ "${1:-}" = postgres ]; then
  PGVER=$(ls /usr/lib/postgresql | sort -n | tail -1)
  PG_CLUSTER=${HS_PG_CLUSTER:-main}  # Debian's cluster name (another one keeps a test away from the shared cluster)
  if ! pg_lsclusters -h 2>/dev/null | grep -q "^$PGVER $PG_CLUSTER "; then
    pg_createcluster "$PGVER" "$PG_CLUSTER" >/dev/null
  fi
  if ! pg_lsclusters -h | grep -q "^$PGVER $PG_CLUSTER .* online"; then
    pg_ctlcluster "$PGVER" "$PG_CLUSTER" start
  fi
  PGPORT=$(pg_lsclusters -h | awk -v v="$PGVER" -v c="$PG_CLUSTER" '$1==v && $2==c {print $3}')
  psql_admin() { su postgres -c "psql -p $PGPORT $*"; }
  for _ in $(seq 50); do psql_admin "-qtAc 'select 1'" >/dev/null 2>&1 && break; sleep 0.2; done
  PG_PASSWORD=$(password var/postgres.password)
  psql_admin "-qtAc \"select 1 from pg_roles where rolname='harness'\"" | grep -q 1 \
    || psql_admin "-qc 'create role harness login createdb'" >/dev/null
  psql_admin "-qtAc \"select 1 from pg_database where datname='harness_studio'\"" | grep -q 1 \
    || su postgres -c "createdb -p $PGPORT -O harness harness_studio"
  # PGPASSWORD, not a command-line argument: `ps` never shows a password.
  logs_in() { PGPASSWORD=$1 psql -h 127.0.0.1 -p "$PGPORT" -U harness -d harness_studio -qtAc 'select 1' >/dev/null 2>&1; }
  if ! logs_in "$PG_PASSWORD"; then
    # The role gets var/postgres.password's password, sent on psql's stdin: a new role, one with the password
    # older scripts published ('harness'), and one whose password this checkout does not know (another
    # checkout's, or a cluster kept from an earlier machine image, as a CI machine may have). This script
    # administers the cluster as its superuser, so it never has to stop here; another checkout that set the
    # role's password loses its login and is told how to get it back.
    if ! { psql_admin "-qtAc \"select 1 from pg_authid where rolname='harness' and rolpassword is null\"" | grep -q 1 \
           || logs_in harness; }; then
      echo "services.sh: the PostgreSQL role 'harness' had a password other than var/postgres.password's" \
           "(another checkout's, or an earlier machine's); it now has this checkout's. Another checkout on this" \
           "machine that uses the role logs in again with a copy of $(pwd)/var/postgres.password" >&2
    fi
    printf "alter role harness password '%s';\n" "$PG_PASSWORD" | psql_admin "-q" >/dev/null
    logs_in "$PG_PASSWORD" || {
      echo "services.sh: the PostgreSQL role 'harness' does not log in on 127.0.0.1:$PGPORT with" \
           "var/postgres.password's password even after it was set; check the cluster's pg_hba.conf" >&2
      exit 1
    }
  fi
  EXPORTS+=("export DATABASE_URL=postgres://harness:$PG_PASSWORD@127.0.0.1:$PGPORT/harness_studio")
fi
}

start_services "$@" </dev/null >&2
printf '%s\n' "${EXPORTS[@]}"
