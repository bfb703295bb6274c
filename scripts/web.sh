#!/usr/bin/env bash
# Serves the studio as production does: collects the static files (hashed names, gzip
# copies) and runs gunicorn with studio/gunicorn_conf.py, on 127.0.0.1:${PORT:-8000}
# unless WEB_HOST says otherwise; WEB_WORKERS (cores + 1) and WEB_THREADS (4) size it.
# scripts/demo.sh runs it; on its own it expects migrations done and Redis reachable
# (scripts/services.sh). SIGTERM or Ctrl-C stops it once the requests in flight end.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${VENV:-.venv}/bin/python  # the virtualenv scripts/bootstrap.sh made (VENV, as there)
# Hashed static names unless told otherwise; collectstatic writes the manifest they come from.
export STATIC_MANIFEST=${STATIC_MANIFEST:-1}
$PY manage.py collectstatic --noinput -v0
exec $PY -m gunicorn -c studio/gunicorn_conf.py studio.wsgi:application
