"""The studio's application server: gunicorn's settings, read from the environment.

    python -m gunicorn -c studio/gunicorn_conf.py studio.wsgi:application

`scripts/web.sh` (the demo), the systemd unit and the container of docs/deploy.md all
start it this way. gunicorn rather than an ASGI server because every studio page is a
plain synchronous Django view over SQLite or PostgreSQL and the live parts poll with htmx:
nothing streams or holds a connection open, so an event loop would only add a thread hop
to each view. Threads (gthread) rather than more processes because a page spends much of
its time waiting on the database or on a file, and each process holds its own copy of
the studio (about 120 MB); benchmarks/studio_load.py measures the choice.

Variables (all optional):
  WEB_HOST          address to bind, 127.0.0.1 (a proxy in front serves the world)
  PORT              port, 8000
  WEB_WORKERS       processes, cores + 1
  WEB_THREADS       threads per process, 4
  WEB_TIMEOUT       seconds a request may run before its worker is restarted, 60
  WEB_ACCESS_LOG    file for the access log, "-" (stdout, the journal under systemd)
  WEB_MAX_REQUESTS  restart a worker after this many requests, 0 (never)
"""

from __future__ import annotations

import os
from pathlib import Path

from studio.envreaders import env_int, env_str

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")

_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

_host = env_str("WEB_HOST", "127.0.0.1")
# an IPv6 address bracketed
bind = f"{f'[{_host}]' if ':' in _host else _host}:{env_int('PORT', 8000, minimum=1)}"
workers = env_int("WEB_WORKERS", _CORES + 1, minimum=1)
threads = env_int("WEB_THREADS", 4, minimum=1)
worker_class = "gthread"
# A studio page answers in well under a second; a request still running after this is stuck, and
# gunicorn replaces its worker. Long work belongs to Celery jobs, never to a request.
timeout = env_int("WEB_TIMEOUT", 60, minimum=1)
# On SIGTERM a worker finishes the requests it holds for up to this long, then exits.
graceful_timeout = 20
keepalive = 5
max_requests = env_int("WEB_MAX_REQUESTS", 0, minimum=0)
max_requests_jitter = max_requests // 10
# The studio is imported once in the master and shared by the forked workers (copy-on-write):
# workers start in a fraction of a second, and an import error stops the server at once
# instead of every worker failing in turn.
preload_app = True
# The workers' heartbeat files: in memory, so a slow or container disk never times a worker out.
worker_tmp_dir = "/dev/shm" if Path("/dev/shm").is_dir() else None
accesslog = env_str("WEB_ACCESS_LOG", "-")
access_log_format = '%(h)s "%(r)s" %(s)s %(B)s %(M)sms'
errorlog = "-"
proc_name = "harness-studio-web"
# gunicorn 24+ opens a control socket at one path per user ($HOME/.gunicorn/gunicorn.ctl): a second
# server on the machine (a test, the load benchmark) would take it over. Nothing here uses it.
control_socket_disable = True


def on_starting(server) -> None:
    """Refuse to start with hashed static names but no collected manifest: every page would be a
    500."""
    from django.conf import settings

    manifest = Path(settings.STATIC_ROOT) / "staticfiles.json"
    if settings.STATIC_MANIFEST and not manifest.is_file():
        raise SystemExit(
            f"{manifest} is missing: the studio's pages name "
            "their static files by the hashes it lists. "
            "Run `python manage.py collectstatic --noinput` with the same environment first "
            "(scripts/web.sh does), or set STATIC_MANIFEST=0 to serve unhashed names."
        )
