"""Django settings for Harness Studio, read from the environment.

SQLite under var/ by default; DATABASE_URL (PostgreSQL) when set; REDIS_URL is
the Celery broker. DEBUG is off unless the environment turns it on (DEBUG=1):
errors show the project's own pages, never Django's debug page.

Two ways to run:
- locally (the default): plain HTTP on the loopback host names; without a
  SECRET_KEY a random one is made once in var/secret_key (mode 0600) and
  shared by the web server and the workers of this checkout;
- HARNESS_STUDIO_PRODUCTION=1: served over HTTPS. SECRET_KEY and
  ALLOWED_HOSTS must come from the environment, DEBUG must be off, cookies
  are secure, HTTP redirects to HTTPS and HSTS is sent. examples/production.env
  lists every variable; `manage.py check --deploy` is clean with it.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from studio.envreaders import env_bool, env_float, env_int, env_list, env_str
from studio.keyfiles import create_once

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("HARNESS_STUDIO_VAR", str(BASE_DIR / "var")))


def _owner_only(folder: Path) -> None:
    """var/ holds the SQLite database (stored secrets, session keys), the keys and the logs:
    owner-only (0700), whichever command makes it first, so a file made under a looser umask is
    still out of other users' reach."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if folder.stat().st_uid == os.getuid() and folder.stat().st_mode & 0o077:
            folder.chmod(0o700)
    except OSError:
        pass  # a read-only or foreign folder: the deployment's own permissions apply


PRODUCTION = env_bool("HARNESS_STUDIO_PRODUCTION", False)
if (
    not PRODUCTION
):  # in production the folder's modes are the deployment's (its proxy serves staticfiles/ there)
    _owner_only(VAR_DIR)
DEBUG = env_bool("DEBUG", False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured(
        "DEBUG must be off when HARNESS_STUDIO_PRODUCTION "
        "is on: the debug page shows every URL and setting"
    )

_MAKE_A_KEY = 'make one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'


def _local_secret_key(path: Path) -> str:
    """The key made once for this checkout: random, readable by its owner only, shared by every
    process."""
    if not path.exists():
        create_once(path, (secrets.token_urlsafe(50) + "\n").encode())
    key = path.read_text().strip()
    if len(key) < 50:
        raise ImproperlyConfigured(
            f"{path}: the secret key there is shorter than 50 characters; delete the file "
            "to make a new one, or set SECRET_KEY"
        )
    return key


if PRODUCTION:
    SECRET_KEY = env_str("SECRET_KEY", "")
    if not SECRET_KEY:
        raise ImproperlyConfigured(
            f"SECRET_KEY is required when HARNESS_STUDIO_PRODUCTION is on; {_MAKE_A_KEY}"
        )
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5:
        raise ImproperlyConfigured(
            f"SECRET_KEY is too weak: {len(SECRET_KEY)} characters, "
            f"{len(set(SECRET_KEY))} different; at least 50 "
            f"and 5 are needed; {_MAKE_A_KEY}"
        )
else:
    SECRET_KEY = env_str("SECRET_KEY", "") or _local_secret_key(VAR_DIR / "secret_key")

if PRODUCTION:
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
    if not ALLOWED_HOSTS:
        raise ImproperlyConfigured(
            "ALLOWED_HOSTS must name the studio's host names when HARNESS_STUDIO_PRODUCTION is on, "
            "comma-separated, e.g. studio.example.com"
        )
else:
    ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "csp",
    "studio.accounts",
    "studio.audit",
    "studio.harnesses",
    "studio.endpoints",
    "studio.jobs",
    "studio.playground",
    "studio.evolution",
    "studio.training",
    "studio.replays",
    "studio.releases",
    "studio.mcpservers",
    "studio.compatibility",
    "studio.traffic",
    "studio.annotation",
    "studio.editbench",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files from collectstatic's folder, served by the application server itself
    # (docs/deploy.md).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "studio.limits.RequestLimitsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

# Content-Security-Policy (django-csp): scripts only from the studio's own static files, so text
# that reaches a page (a file path, a skill body) can never run as script, even where escaping would
# not protect it (a JavaScript string inside an attribute). No inline <script>, no on* attributes,
# no eval; behaviour is declared with data attributes and wired in static/studio/studio.js. Styles
# allow inline style attributes (htmx adds its indicator style); <script type="application/json">
# data blocks (json_script) are data, not script, and need no allowance.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

ROOT_URLCONF = "studio.urls"
WSGI_APPLICATION = "studio.wsgi.application"
ASGI_APPLICATION = "studio.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "studio.accounts.context_processors.roles",
            ],
        },
    },
]

_DATABASE_URL = env_str("DATABASE_URL", "")
if _DATABASE_URL:
    DATABASES = {"default": dj_database_url.parse(_DATABASE_URL, conn_max_age=60)}
else:
    DATABASES = {
        "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "studio.sqlite3"}
    }
# Test databases are named per test process: several test runs may share this
# checkout at once. SQLite's is a file (not :memory:) so a real Celery worker
# process started by a test can open it too.
_TEST_SUFFIX = env_str("HS_TEST_DB_SUFFIX", str(os.getpid()))
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / f"test-studio-{_TEST_SUFFIX}.sqlite3")}
    # The demo's processes (two Celery worker processes, the training worker, the web server) all
    # write this one file. A transaction that reads and then writes cannot wait for another writer:
    # SQLite answers "database is locked" at once, whatever the timeout. So every transaction takes
    # the write lock as it begins (IMMEDIATE) and waits up to the busy timeout for it; WAL lets
    # readers go on beside the writer. A statement that still meets the lock is run again with
    # backoff (studio/dblocks.py). More than one host: PostgreSQL (docs/workers.md).
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=30,
        transaction_mode="IMMEDIATE",
        init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
    )
else:
    DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{_TEST_SUFFIX}"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
# Hashed names (studio.<hash>.css, cached for a year by WhiteNoise, gzip beside them) need
# collectstatic's manifest before any page renders: on in production and in scripts/web.sh (the
# demo), which collect first; off for tests and `runserver`, which serve static/ as it is.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", PRODUCTION)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if STATIC_MANIFEST
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "accounts:login"

SESSION_COOKIE_HTTPONLY = True
# Sign-in throttling (studio/accounts/services.py): this many failures for a username within the
# window refuse further attempts for it, the right password included, until it passes; four times as
# many from one client address make each attempt from it wait SIGN_IN_ADDRESS_DELAY_S first (a
# delay, not a wall: people behind one address are not locked out by made-up names).
SIGN_IN_MAX_FAILURES = env_int("SIGN_IN_MAX_FAILURES", 5, minimum=1)
SIGN_IN_WINDOW_S = env_int("SIGN_IN_WINDOW_S", 15 * 60, minimum=60)
SIGN_IN_ADDRESS_DELAY_S = env_float("SIGN_IN_ADDRESS_DELAY_S", 2.0, minimum=0.0)
# How many reverse proxies in front of the studio append the address they received from to
# X-Forwarded-For (the nginx of docs/deploy.md: 1). The client address (sign-in throttling) is the
# entry that many from the right; 0 (the default) reads no header and uses the socket's address.
# Never more than the proxies there really are: the entries beyond them are the client's to forge.
TRUSTED_PROXY_HOPS = env_int("TRUSTED_PROXY_HOPS", 0, minimum=0)
# How long a session lasts without signing in again (Django's default is two weeks; production.env:
# 8 hours).
SESSION_COOKIE_AGE = env_int(
    "SESSION_COOKIE_AGE", 14 * 24 * 3600 if not PRODUCTION else 8 * 3600, minimum=300
)
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if PRODUCTION:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    # Behind a proxy that terminates TLS, Django sees plain HTTP; the proxy says so in this header.
    if env_bool("TRUST_X_FORWARDED_PROTO", False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# --- Celery (broker: Redis) ---------------------------------------------------


def _local_redis_url() -> str:
    """The Redis scripts/services.sh starts: on loopback with the password it keeps in
    var/redis.password."""
    password_file = VAR_DIR / "redis.password"
    password = password_file.read_text().strip() if password_file.exists() else ""
    return f"redis://:{password}@127.0.0.1:6379/0" if password else "redis://127.0.0.1:6379/0"


REDIS_URL = env_str("REDIS_URL", "") or _local_redis_url()
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_IGNORE_RESULT = True  # job state lives in the database, not a result backend
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "studio")
# Training and deployment-replay jobs go here; only workers started with `-Q train` read it
# (docs/workers.md).
CELERY_TRAIN_QUEUE = env_str("CELERY_TRAIN_QUEUE", "train")
# Follow-on jobs (Job.automatic: a label move's or a new checkpoint's compatibility cells, and the
# chunks of their evaluation runs) go here; only workers started with `-Q follow-on` read it, so a
# person's playground run or evaluation on the default queue never waits behind them
# (docs/workers.md).
CELERY_FOLLOW_ON_QUEUE = env_str("CELERY_FOLLOW_ON_QUEUE", "follow-on")
# What a running job sends (an evaluation's chunk tasks) goes to the job's own queue.
CELERY_TASK_ROUTES = ("studio.jobs.routing.route_task",)
# Each process of this worker prefills the default endpoint's local model with the production
# Harness's prompt when it starts (studio/playground/signals.py), so its first request does not pay
# for it: on for the demo's worker (scripts/demo.sh) and the production unit, off for the training
# worker and the tests.
WARM_UP_WORKER = env_bool("HARNESS_WARM_UP_WORKER", False)

# --- Caches (studio/filecache.py, harnesses/diffs.py) ------------------------- What the studio
# computes from files and versions (training curves, replay figures, ablation tables, diff
# summaries) is kept in "default": on Redis when REDIS_URL is set in the environment (every web
# process and worker shares it), in this process's memory otherwise. "local" is always this
# process's memory: values only worth keeping beside the code that reads them (parsed metrics
# columns, loaded bundles). Keys name what the value was computed from, so nothing here needs
# clearing. On Redis every key starts with HARNESS_CACHE_PREFIX (default studio-cache): one studio's
# processes share it, and the test suite gives each run a prefix of its own (tests/conftest.py), so
# a run never reads the demo's entries or an earlier run's.
_CACHE_REDIS_URL = os.environ.get("REDIS_URL", "")
CACHE_KEY_PREFIX = env_str("HARNESS_CACHE_PREFIX", "").strip() or "studio-cache"
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": _CACHE_REDIS_URL,
            "KEY_PREFIX": CACHE_KEY_PREFIX,
            "TIMEOUT": 7 * 24 * 3600,
        }
        if _CACHE_REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "studio-default",
            "TIMEOUT": None,
            "OPTIONS": {"MAX_ENTRIES": 1000},
        }
    ),
    "local": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "studio-local",
        "TIMEOUT": None,
        "OPTIONS": {"MAX_ENTRIES": 300},
    },
}
# Run folders of the training, evaluation and replay runs started from the studio (one folder per
# run; the workers that run them and the web process must see the same path: a shared disk across
# hosts).
TRAINING_RUNS_DIR = Path(env_str("TRAINING_RUNS_DIR", str(BASE_DIR / "runs" / "studio")))
# How this worker host starts a training command: empty runs `python -m training ...`; on a
# multi-GPU host e.g. "accelerate launch --num_processes 4" runs `accelerate launch --num_processes
# 4 -m training ...` with the same config files (docs/workers.md). A host setting, never a form
# field.
TRAINING_LAUNCHER = env_str("TRAINING_LAUNCHER", "")
CELERY_BEAT_SCHEDULE = {
    "reap-stale-jobs": {"task": "studio.jobs.tasks.reap_stale_jobs", "schedule": 10.0},
    "resume-stalled-eval-runs": {
        "task": "studio.evolution.tasks.resume_stalled_eval_runs",
        "schedule": 10.0,
    },
}

# --- Jobs ------------------------------------------------------------------------
# A running job's worker writes a heartbeat every JOB_HEARTBEAT_S seconds; a job
# whose heartbeat is older than JOB_LEASE_S is marked failed by the reaper.
JOB_HEARTBEAT_S = env_float("JOB_HEARTBEAT_S", 2.0, minimum=0.1)
JOB_LEASE_S = env_float("JOB_LEASE_S", 20.0, minimum=0.5)
JOB_LOG_TAIL_CHARS = env_int("JOB_LOG_TAIL_CHARS", 20000, minimum=1000)
# Jobs one person may have queued or running at once (0: no limit); past it, starting one is a 429
# naming the limit and the jobs (studio/limits.py). Six 300 s playground runs once kept another
# user's 0.5 s job waiting 49 s.
JOB_QUOTA_PER_USER = env_int("JOB_QUOTA_PER_USER", 3, minimum=0)
# Follow-on jobs the studio queues by itself (a finished policy run's compatibility cells, a label
# move's cells): off with FOLLOW_ON_JOBS=0. They never run ahead of a person's queued job: one waits
# this long and is sent again.
FOLLOW_ON_JOBS = env_bool("FOLLOW_ON_JOBS", True)
# Follow-on jobs queued or running at once on behalf of one person (the one whose label move or
# training run caused them; 0: no limit): a follow-on past it is not queued, and the job that would
# have queued it says so (its cell can be asked for on /compatibility/ later).
JOB_FOLLOW_ON_QUOTA_PER_USER = env_int("JOB_FOLLOW_ON_QUOTA_PER_USER", 4, minimum=0)
AUTOMATIC_JOB_YIELD_S = env_float("AUTOMATIC_JOB_YIELD_S", 5.0, minimum=0.1)
# The longest wait the worker check may ask for.
WORKER_CHECK_MAX_S = env_float("WORKER_CHECK_MAX_S", 30.0, minimum=1.0)
# How long a statement that meets a locked SQLite database is retried (with backoff) before it
# fails: a lock is held at most as long as one write transaction (studio/dblocks.py).
DB_LOCK_RETRY_S = env_float("DB_LOCK_RETRY_S", 120.0, minimum=0.0)
# An evaluation run's cases are split into chunks of at most EVAL_CHUNK_CASES cases that any
# worker claims (docs/workers.md): small enough that N workers end within one chunk of each other.
EVAL_CHUNK_CASES = env_int("EVAL_CHUNK_CASES", 8, minimum=1)
# A claimant scores this many of its chunk's cases at once (one Agent and policy each), so a local
# model's requests share the engine's slots (llama.cpp decodes them together; HARNESS_LLAMA_SLOTS,
# default 4). 1 by default: on 2 cores four concurrent requests of the demo checkpoint all reach the
# Harness's 10 s budget (47 of 48 dev cases fell back at 4, against a third at 1), so the scores
# would measure the machine, not the model. Raise it where each concurrent request has cores of its
# own, or behind a GPU endpoint.
EVAL_CASES_AT_ONCE = env_int("EVAL_CASES_AT_ONCE", 1, minimum=1)

# --- Studio ----------------------------------------------------------------------
MAX_IMPORT_BYTES = env_int("MAX_IMPORT_BYTES", 20 * 1024 * 1024, minimum=1024)
# The traffic API (studio.traffic.api) refuses a larger body with 413, from its Content-Length,
# unread.
TRAFFIC_MAX_BODY_BYTES = env_int("TRAFFIC_MAX_BODY_BYTES", 2 * 1024 * 1024, minimum=1024)
# At most this many trajectories stored per deployment in any hour; past it the traffic API answers
# 429 with Retry-After (a leaked deployment token cannot fill the database).
TRAFFIC_MAX_RECORDS_PER_HOUR = env_int("TRAFFIC_MAX_RECORDS_PER_HOUR", 10_000, minimum=1)
# A judge whose newest calibration agrees with the human labels less than this (either dimension) is
# marked beside every figure it scored, and the release gates refuse its figures without an
# override.
JUDGE_MIN_AGREEMENT = env_float("JUDGE_MIN_AGREEMENT", 0.8, minimum=0.0)
# The committed human set (a calibration file people labelled, docs/evaluation.md "Calibration
# files"): the calibration the gates read first, and the calibration form's default.
JUDGE_CALIBRATION_FILE = Path(
    env_str("JUDGE_CALIBRATION_FILE", str(BASE_DIR / "data" / "calibration" / "human.jsonl"))
)
# A calibration needs at least this many labelled replies (and every category) to decide anything.
CALIBRATION_MIN_REPLIES = env_int("CALIBRATION_MIN_REPLIES", 100, minimum=1)
# A YAML registry of MCP servers (harness.mcp_registry's format) beside those registered
# on the MCP servers page; relative to the checkout. Empty: the page's servers only.
HS_MCP_REGISTRY = env_str("HS_MCP_REGISTRY", "")
# The Ed25519 key the studio signs decided release manifests with (PEM, made once, owner-only); the
# GPU host verifies with its public half, /releases/signing-key.pem (docs/security.md, "Release
# manifests").
RELEASE_SIGNING_KEY = Path(env_str("RELEASE_SIGNING_KEY", str(VAR_DIR / "release-signing-key.pem")))
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_IMPORT_BYTES
# A request body larger than this is refused by its Content-Length before any of it is read (413,
# studio/limits.py): a 300 MiB upload was once written to /tmp in full before its 400. The imports'
# own cap (MAX_IMPORT_BYTES) plus room for the form's other fields and the multipart framing.
MAX_REQUEST_BYTES = env_int("MAX_REQUEST_BYTES", MAX_IMPORT_BYTES + 1024 * 1024, minimum=1024)
# The Fernet key stored endpoint secret values are encrypted with (studio/endpoints/crypto.py);
# empty: the file var/endpoint-secrets.key, made once (owner-only) locally, required in production.
ENDPOINT_SECRETS_KEY = env_str("ENDPOINT_SECRETS_KEY", "")
# The compatibility set (evaluation/compatibility.py) is drawn from this dataset (the demo's
# dev-set), about COMPATIBILITY_CASES cases plus each of them under one HSA variant; another size is
# another set version.
COMPATIBILITY_SOURCE_DATASET = env_str("COMPATIBILITY_SOURCE_DATASET", "dev-482")
COMPATIBILITY_CASES = env_int("COMPATIBILITY_CASES", 60, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
}
