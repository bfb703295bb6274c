#!/usr/bin/env bash
# Sets up and starts Harness Studio on this machine: Redis, migrations, demo
# data (roles, demo users printed with their passwords, the demo Harness v1 at
# production, the local model endpoint), the Celery workers (the interactive one with its beat
# scheduler, a follow-on one at a lower CPU priority, a training one), and the web server
# (gunicorn, scripts/web.sh) on ${HOST:-127.0.0.1}:${PORT:-8000}. Ctrl-C stops all.
# Idempotent: a second run reuses the virtualenv, database and demo data.
#
# Not open to the network: the web server listens on loopback unless HOST says otherwise
# (HOST=0.0.0.0 with ALLOWED_HOSTS naming the host names it is reached by), Django's ALLOWED_HOSTS
# names what it binds, Redis and PostgreSQL have generated passwords (scripts/services.sh), and var/
# (the SQLite database, the keys, the logs) is readable by its owner only.
set -euo pipefail
cd "$(dirname "$0")/.."
umask 077  # every file the demo makes (database, keys, logs) is its owner's only
bash scripts/bootstrap.sh
mkdir -p var/log
# Files made by an earlier run under a looser umask (the database was 0644) become owner-only too.
chmod 700 var
chmod -R go-rwx var
service_env=$(bash scripts/services.sh)
eval "$service_env"
export REDIS_URL
if [ -n "${DATABASE_URL:-}" ]; then export DATABASE_URL; fi
PY=.venv/bin/python
PORT=${PORT:-8000}
HOST=${HOST:-127.0.0.1}
if [ -z "${ALLOWED_HOSTS:-}" ]; then
  case "$HOST" in
    127.0.0.1|localhost) ALLOWED_HOSTS="127.0.0.1,localhost" ;;
    0.0.0.0|::)
      echo "[demo] HOST=$HOST listens on every interface: set ALLOWED_HOSTS to the host names it is reached by" \
           "(e.g. ALLOWED_HOSTS=studio.lan HOST=$HOST bash scripts/demo.sh)" >&2
      exit 2 ;;
    *) ALLOWED_HOSTS="$HOST,127.0.0.1,localhost" ;;
  esac
fi
export ALLOWED_HOSTS

say() { printf '\033[1m[demo]\033[0m %s\n' "$*"; }
say "migrations"
$PY manage.py migrate --noinput -v0
say "demo data"
$PY manage.py seed_demo
say "demo evaluation sets (dev-set 482, Live-Stream QA 978, robustness, replay 110)"
$PY manage.py seed_evolution_demo
# The demo's model: the shipped adapter merged with its base and exported for llama.cpp, once (about
# 30 s on 2 cores the first time; a second start finds both in the model cache).
say "demo model: models/demo-adapter (merged with its base and exported once)"
$PY -m serving prepare models/demo-adapter

pids=()
stop() {
  trap - INT TERM EXIT
  say "stopping the web server and the workers"
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

say "Celery worker for people's jobs, queue ${CELERY_QUEUE:-studio} (log: var/log/celery.log)"
# `python -m celery` keeps the repository root on sys.path, like manage.py does. Each of its processes
# prefills the demo model with the production Harness's prompt as it starts (HARNESS_WARM_UP_WORKER),
# so the first playground request does not pay for it. It reads only the queue of what a person starts
# (playground runs, their own evaluations): follow-on work never takes its slots (docs/workers.md).
HARNESS_WARM_UP_WORKER=1 $PY -m celery -A studio worker --queues "${CELERY_QUEUE:-studio}" \
  --hostname "studio@%h" --beat --schedule var/celerybeat-schedule \
  --concurrency "${CELERY_CONCURRENCY:-2}" --loglevel INFO >>var/log/celery.log 2>&1 &
pids+=($!)
say "Celery follow-on worker, one job at a time, queue ${CELERY_FOLLOW_ON_QUEUE:-follow-on}, nice 10 (log: var/log/celery-follow-on.log)"
# What the studio queues by itself (a label move's or a new checkpoint's compatibility cells) waits
# on its own queue for this worker; at a lower CPU priority it leaves the cores to people's jobs.
nice -n 10 $PY -m celery -A studio worker --queues "${CELERY_FOLLOW_ON_QUEUE:-follow-on}" \
  --hostname "follow-on@%h" --concurrency 1 --loglevel INFO >>var/log/celery-follow-on.log 2>&1 &
pids+=($!)
say "Celery training worker, one job at a time, queue ${CELERY_TRAIN_QUEUE:-train} (log: var/log/celery-train.log)"
# Training and replay jobs wait on their own queue, so they never take the evaluation worker's slots.
$PY -m celery -A studio worker --queues "${CELERY_TRAIN_QUEUE:-train}" --hostname "train@%h" \
  --concurrency 1 --loglevel INFO >>var/log/celery-train.log 2>&1 &
pids+=($!)
say "web server (gunicorn) on http://$HOST:$PORT/ (Host names accepted: $ALLOWED_HOSTS; access log: var/log/web-access.log; Ctrl-C stops everything)"
# The production server (docs/deploy.md): DEBUG off, static files hashed and served by WhiteNoise,
# workers and threads from the cores (WEB_WORKERS, WEB_THREADS), bound to HOST (loopback unless told).
WEB_HOST=$HOST PORT=$PORT WEB_ACCESS_LOG=${WEB_ACCESS_LOG:-var/log/web-access.log} bash scripts/web.sh &
pids+=($!)
# Return as soon as any process ends; the trap then stops the others.
wait -n "${pids[@]}"
