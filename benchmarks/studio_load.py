"""Benchmark: the load the studio's web server holds, gunicorn (the demo's) beside `runserver`.

N signed-in users, each in its own thread with its own keep-alive connection, walk the main
pages in turn (home, a Harness, a version, evolution, training, compatibility, jobs, their
draft in the editor) and save their draft once per round (a POST that validates the whole
bundle). Each user signs in once, through the sign-in form, and keeps its session cookie, as a
browser does (and a sign-in throttle per address would refuse one sign-in per round).
Loopback only; the load client runs on the same machine and shares its cores.

    .venv/bin/python benchmarks/studio_load.py [--clients 16] [--seconds 30] [--warmup 5]
    .venv/bin/python benchmarks/studio_load.py --soak 10      # gunicorn only, while a worker
    evaluates

The first form measures `bash scripts/web.sh` (gunicorn, studio/gunicorn_conf.py) and then
`manage.py runserver --insecure` (the demo before issue 44) on one scratch database
(var/bench-load/, the demo's data from seed_demo and seed_evolution_demo) and prints
pages/s, p50, p95, max and errors for each, side by side (--server gunicorn|runserver: one),
with each page's latencies and the CPU seconds the server and the load client used: on a
contended machine requests per server CPU-second is the figure that moves least.

--soak MINUTES starts a private Redis and a Celery worker, queues an evaluation of the demo
Harness on the dev-set with --soak-endpoint (local-default: the base model on llama.cpp, which
takes the cores the web server would like), and keeps the load on gunicorn for that long. Every
--window seconds it prints that window's pages/s, p95, errors and the web processes' memory
(PSS of the master and its workers, from /proc), then the growth from the first window to the last.

Targets (issue 44): 16 clients on 2 cores, workers idle: at least 80 pages/s, p95 at most 500 ms,
0 errors. A 10-minute soak with an evaluation running: 0 errors, web memory growth under 10%.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
HARNESS = "livestream-avatar"
PAGES = [
    "/",
    f"/h/{HARNESS}/",
    f"/h/{HARNESS}/v/1/",
    "/evolution/",
    "/training/",
    "/compatibility/",
    "/jobs/",
]
EDITED_PATH = "prompt.yaml"
EDIT_MARK = "# edited by benchmarks/studio_load.py\n"
PASSWORD = "bench-load-password"

_PREPARE = r"""
import json, sys
import django
django.setup()
from studio.accounts.roles import ADMIN, OPERATOR
from studio.accounts.services import user_create
from studio.harnesses.models import Draft, Harness, HarnessVersion
from studio.harnesses.services import draft_create

harness = Harness.objects.get(name=sys.argv[1])
version = HarnessVersion.objects.get(harness=harness, number=1)
drafts = {}
for index in range(int(sys.argv[2])):
    user = user_create(username=f"bench-{index:02d}", password=sys.argv[3], roles=[OPERATOR, ADMIN])
    draft = Draft.objects.filter(owner=user, harness=harness).first() or draft_create(
        harness=harness, base_version=version, owner=user, title="load benchmark")
    drafts[user.username] = draft.pk
print(json.dumps(drafts))
"""

_EVALUATE = r"""
import sys
import django
django.setup()
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Dataset, DatasetCase
from studio.evolution.services.runs import eval_run_start
from studio.harnesses.models import HarnessVersion

version = HarnessVersion.objects.get(harness__name=sys.argv[1], number=1)
dataset = Dataset.objects.filter(name="dev-482").order_by("-pk").first()
cases = list(DatasetCase.objects.filter(dataset=dataset).order_by("pk")
             .values_list("case_id", flat=True))
endpoint = ModelEndpoint.objects.get(name=sys.argv[2])
run = eval_run_start(version=version, dataset=dataset, endpoint=endpoint, case_ids=cases,
                     actor=None)
print(f"evaluation run #{run.pk}: {len(cases)} cases of {dataset.name} on {sys.argv[2]}")
"""


# Every case any evaluation scored: a worker starting on the scratch database first resumes a run an
# earlier soak left unfinished, so "this run's progress" would say nothing about the worker's work.
_SCORED = (
    "import django; django.setup(); from studio.evolution.models "
    "import CaseResult; print(CaseResult.objects.count())"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _run(env: dict[str, str], *argv: str) -> str:
    done = subprocess.run(
        [sys.executable, *argv], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        what = "a setup script" if argv[0] == "-c" else " ".join(argv[:2])
        raise SystemExit(f"{what} failed:\n{done.stderr[-3000:]}")
    return done.stdout


def prepare(env: dict[str, str], clients: int) -> dict[str, int]:
    """The demo's data in the scratch database (idempotent) and one user with one draft per
    client."""
    started = time.perf_counter()
    _run(env, "manage.py", "migrate", "--noinput", "-v0")
    _run(env, "manage.py", "seed_demo")
    _run(env, "manage.py", "seed_evolution_demo")
    drafts = json.loads(
        _run(env, "-c", _PREPARE, HARNESS, str(clients), PASSWORD).strip().splitlines()[-1]
    )
    print(
        f"prepared {env['HARNESS_STUDIO_VAR']}: demo data, {clients} users with a draft each "
        f"({time.perf_counter() - started:.0f} s)"
    )
    return drafts


class Server:
    """One web server process on a loopback port; stopped with SIGTERM as Ctrl-C would."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.name = name
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        argv = [a.replace("{port}", str(self.port)) for a in argv]
        self.process = subprocess.Popen(
            argv,
            env={**env, "PORT": str(self.port)},
            cwd=ROOT,
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(self.url + "/accounts/login/", timeout=5)
                return
            except httpx.TransportError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit(
                        f"{name} did not answer on {self.url}:\n{log.read_text()[-3000:]}"
                    ) from None
                time.sleep(0.3)

    def pids(self) -> list[int]:
        """The server process and its children (gunicorn's workers)."""
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == self.process.pid:
                children.append(int(stat.parent.name))
        return [self.process.pid, *children]

    def cpu_seconds(self) -> float:
        """User + system CPU time of the server's processes so far."""
        ticks = 0
        for pid in self.pids():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        return ticks / os.sysconf("SC_CLK_TCK")

    def pss_mb(self) -> float:
        total_kb = 0
        for pid in self.pids():
            try:
                text = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            total_kb += int(re.search(r"^Pss:\s+(\d+) kB", text, re.M).group(1))
        return total_kb / 1024

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass
class Sample:
    at: float
    seconds: float
    ok: bool
    what: str


@dataclass
class User:
    """One signed-in user: its session, its draft, its own connection."""

    username: str
    draft_id: int
    cookies: dict[str, str] = field(default_factory=dict)

    def sign_in(self, base_url: str) -> None:
        with httpx.Client(base_url=base_url, timeout=60) as http:
            form = http.get("/accounts/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
            signed = http.post(
                "/accounts/login/",
                data={
                    "csrfmiddlewaretoken": token,
                    "username": self.username,
                    "password": PASSWORD,
                    "next": "/",
                },
            )
            if signed.status_code != 302 or "sessionid" not in http.cookies:
                raise SystemExit(
                    f"signing in as {self.username} answered "
                    f"{signed.status_code}: {signed.text[:300]}"
                )
            self.cookies = dict(http.cookies)


def _walk(user: User, base_url: str, stop: threading.Event, samples: list[Sample]) -> None:
    """Round after round: every page, the editor, one save. Errors are counted, never retried."""
    headers = {
        "Cookie": "; ".join(f"{k}={v}" for k, v in user.cookies.items()),
        "Referer": base_url + "/",
    }
    with httpx.Client(
        base_url=base_url, timeout=30, headers=headers, follow_redirects=False
    ) as http:
        while not stop.is_set():
            editor_url = f"/drafts/{user.draft_id}/?path={EDITED_PATH}"
            editor_text = ""
            for url in [*PAGES, editor_url]:
                started = time.perf_counter()
                try:
                    response = http.get(url)
                    ok = response.status_code == 200
                    if url == editor_url:
                        editor_text = response.text
                except httpx.HTTPError:
                    ok = False
                samples.append(Sample(time.monotonic(), time.perf_counter() - started, ok, url))
                if stop.is_set():
                    return
            revision = re.search(r'name="revision" value="(\d+)"', editor_text)
            text = re.search(
                r"<textarea[^>]*name=\"text\"[^>]*>(.*?)</textarea>", editor_text, re.S
            )
            if not (revision and text):
                samples.append(Sample(time.monotonic(), 0.0, False, "editor form"))
                continue
            current = html.unescape(text.group(1))
            body = current.replace(EDIT_MARK, "") if EDIT_MARK in current else current + EDIT_MARK
            started = time.perf_counter()
            try:
                saved = http.post(
                    f"/drafts/{user.draft_id}/save/",
                    data={
                        "path": EDITED_PATH,
                        "text": body,
                        "revision": revision.group(1),
                        "csrfmiddlewaretoken": user.cookies.get("csrftoken", ""),
                    },
                    headers={"X-CSRFToken": user.cookies.get("csrftoken", "")},
                )
                ok = saved.status_code == 302 and "/drafts/" in saved.headers.get("location", "")
            except httpx.HTTPError:
                ok = False
            samples.append(Sample(time.monotonic(), time.perf_counter() - started, ok, "save"))


def _percentile(ordered: list[float], q: float) -> float:
    return (
        ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]
        if ordered
        else float("nan")
    )


def summarize(samples: list[Sample], seconds: float) -> dict:
    ordered = sorted(s.seconds for s in samples)
    return {
        "requests": len(samples),
        "pages_per_s": len(samples) / seconds,
        "p50_ms": _percentile(ordered, 0.5) * 1000,
        "p95_ms": _percentile(ordered, 0.95) * 1000,
        "max_ms": (ordered[-1] if ordered else float("nan")) * 1000,
        "errors": sum(not s.ok for s in samples),
    }


def load(
    users: list[User],
    base_url: str,
    *,
    warmup: float,
    seconds: float,
    on_window=None,
    window: float = 0.0,
) -> list[Sample]:
    """Every user walks for warmup + seconds; the samples that started after the warm-up are
    returned."""
    stop = threading.Event()
    samples: list[Sample] = []
    threads = [
        threading.Thread(target=_walk, args=(user, base_url, stop, samples), daemon=True)
        for user in users
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    measured_from = started + warmup
    ends = measured_from + seconds
    next_window = measured_from + window if window else ends
    while (now := time.monotonic()) < ends:
        time.sleep(max(0.0, min(ends, next_window) - now))
        if on_window and time.monotonic() >= next_window:
            on_window(
                [s for s in samples if next_window - window <= s.at - s.seconds < next_window],
                window,
            )
            next_window += window
    stop.set()
    for thread in threads:
        thread.join(60)
    return [s for s in samples if measured_from <= s.at - s.seconds < ends]


def _row(name: str, figures: dict) -> str:
    return (
        f"| {name} | {figures['pages_per_s']:.1f} | "
        f"{figures['p50_ms']:.0f} ms | {figures['p95_ms']:.0f} ms "
        f"| {figures['max_ms'] / 1000:.2f} s | {figures['errors']} |"
    )


def compare(env: dict[str, str], users: list[User], args) -> None:
    var = Path(env["HARNESS_STUDIO_VAR"])
    servers = [
        ("gunicorn (scripts/web.sh)", ["bash", "scripts/web.sh"], {}),
        (
            "runserver --insecure",
            [
                sys.executable,
                "manage.py",
                "runserver",
                "127.0.0.1:{port}",
                "--noreload",
                "--insecure",
            ],
            {"STATIC_MANIFEST": "0"},
        ),
    ]
    if args.server != "both":
        servers = [entry for entry in servers if entry[0].startswith(args.server)]
    rows = []
    for name, argv, extra in servers:
        server = Server(name, argv, {**env, **extra}, var / f"{name.split()[0]}.log")
        try:
            if not users[0].cookies:
                for (
                    user
                ) in users:  # once, against the first server; the session is in the shared database
                    user.sign_in(server.url)
            print(
                f"{name}: {server.url}, {len(server.pids())} process(es); {_load_average()} before"
            )
            client_cpu, server_cpu = time.process_time(), server.cpu_seconds()
            samples = load(users, server.url, warmup=args.warmup, seconds=args.seconds)
            client_cpu, server_cpu = (
                time.process_time() - client_cpu,
                server.cpu_seconds() - server_cpu,
            )
            figures = summarize(samples, args.seconds)
            rows.append((name, figures))
            # the load client shares the cores: its own CPU seconds say how much it took from the
            # server Under contention each session gets one share of the cores (Linux autogroups),
            # whatever its number of processes: the server's CPU seconds say what it got, requests
            # per CPU second what it did with them.
            print(
                f"  {figures['requests']} requests in {args.seconds:.0f} "
                f"s; in {args.warmup + args.seconds:.0f} s the "
                f"server used {server_cpu:.1f} CPU-s "
                f"({figures['requests'] / max(server_cpu, 0.01):.0f} "
                "requests/CPU-s counting the warm-up's CPU), the load "
                f"client {client_cpu:.1f}; {_load_average()} after"
            )
            by_page = {}
            for sample in samples:
                by_page.setdefault(re.sub(r"/\d+/", "/N/", sample.what.split("?")[0]), []).append(
                    sample
                )
            for what, page_samples in by_page.items():
                ordered = sorted(s.seconds for s in page_samples)
                print(
                    f"    {what:<28} n={len(ordered):<5} p50 "
                    f"{_percentile(ordered, 0.5) * 1000:6.0f} ms  "
                    f"p95 {_percentile(ordered, 0.95) * 1000:6.0f} "
                    f"ms  max {ordered[-1] * 1000:6.0f} ms"
                )
            failed = sorted({s.what for s in samples if not s.ok})
            if failed:
                print(f"  errors on: {', '.join(failed)}")
        finally:
            server.stop()
    print(
        f"\n{len(users)} signed-in clients, {args.seconds:.0f} "
        f"s each after {args.warmup:.0f} s warm-up, "
        f"{len(PAGES) + 1} pages and one draft save per round\n"
    )
    print("| server | pages/s | p50 | p95 | max | errors |\n|---|---|---|---|---|---|")
    for name, figures in rows:
        print(_row(name, figures))


def soak(env: dict[str, str], users: list[User], args) -> None:
    var = Path(env["HARNESS_STUDIO_VAR"])
    redis_port = _free_port()
    redis = subprocess.run(
        ["bash", "scripts/services.sh"],
        env={**os.environ, "REDIS_PORT": str(redis_port)},
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if redis.returncode != 0:
        raise SystemExit(f"scripts/services.sh: {redis.stderr[-2000:]}")
    # the URL services.sh prints, with the password it keeps in var/redis.password
    # (docs/security.md)
    urls = re.findall(r"^export REDIS_URL=(\S+)$", redis.stdout, re.MULTILINE)
    env = {**env, "REDIS_URL": urls[-1] if urls else f"redis://127.0.0.1:{redis_port}/0"}
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "studio",
            "worker",
            "--concurrency",
            "1",
            "--loglevel",
            "INFO",
        ],
        env=env,
        cwd=ROOT,
        stdout=(var / "celery.log").open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = None
    try:
        server = Server("gunicorn", ["bash", "scripts/web.sh"], env, var / "gunicorn-soak.log")
        for user in users:
            user.sign_in(server.url)
        print(_run(env, "-c", _EVALUATE, HARNESS, args.soak_endpoint).strip())
        scored_before = int(_run(env, "-c", _SCORED).strip().splitlines()[-1])
        print(
            f"soak: {len(users)} clients on {server.url} for {args.soak:g} min; {_load_average()}\n"
        )
        print(
            "| minute | pages/s | p95 | errors | web PSS | load 1 min |\n|---|---|---|---|---|---|"
        )
        memory: list[float] = []
        started = time.monotonic()

        def window(samples: list[Sample], seconds: float) -> None:
            figures = summarize(samples, seconds)
            memory.append(server.pss_mb())
            print(
                f"| {(time.monotonic() - started) / 60:.1f} | {figures['pages_per_s']:.1f} | "
                f"{figures['p95_ms']:.0f} ms | {figures['errors']} | {memory[-1]:.0f} MB | "
                f"{os.getloadavg()[0]:.2f} |",
                flush=True,
            )

        samples = load(
            users,
            server.url,
            warmup=args.warmup,
            seconds=args.soak * 60,
            on_window=window,
            window=args.window,
        )
        figures = summarize(samples, args.soak * 60)
        growth = (memory[-1] - memory[0]) / memory[0] * 100 if len(memory) > 1 else float("nan")
        scored = int(_run(env, "-c", _SCORED).strip().splitlines()[-1]) - scored_before
        print(
            f"\nsoak: {figures['requests']} requests, {figures['errors']} "
            f"errors, p95 {figures['p95_ms']:.0f} ms; "
            f"web memory {memory[0]:.0f} -> {memory[-1]:.0f} MB ({growth:+.1f}%); "
            f"the worker scored {scored} evaluation cases meanwhile"
        )
    finally:
        if server:
            server.stop()
        os.kill(
            worker.pid, signal.SIGQUIT
        )  # cold shutdown: the chunk in hand is claimed again later
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
        subprocess.run(
            ["redis-cli", "-u", env["REDIS_URL"], "shutdown", "nosave"], capture_output=True
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--clients", type=int, default=16, help="signed-in users walking the pages at once"
    )
    parser.add_argument("--seconds", type=float, default=30, help="measured seconds per server")
    parser.add_argument("--warmup", type=float, default=5, help="seconds of load before measuring")
    parser.add_argument(
        "--server",
        choices=("both", "gunicorn", "runserver"),
        default="both",
        help="measure one server only",
    )
    parser.add_argument(
        "--soak",
        type=float,
        default=0,
        metavar="MINUTES",
        help="gunicorn only, for this long, while a Celery worker runs an evaluation",
    )
    parser.add_argument(
        "--window", type=float, default=60, help="seconds per row of the soak's table"
    )
    parser.add_argument(
        "--soak-endpoint", default="local-default", help="the model endpoint the evaluation uses"
    )
    parser.add_argument(
        "--var",
        default=str(ROOT / "var" / "bench-load"),
        help="the scratch folder (HARNESS_STUDIO_VAR): database, collected static files, logs",
    )
    args = parser.parse_args()
    if not 1 <= args.clients <= 64 or not 0 < args.seconds <= 600 or args.soak > 60:
        raise SystemExit(
            "bounded on purpose: --clients 1..64, --seconds up to 600, --soak up to 60 minutes"
        )

    var = Path(args.var).resolve()
    var.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "HARNESS_STUDIO_VAR": str(var),
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "studio.settings",
        "VENV": str(Path(sys.executable).parent.parent),
        "WEB_ACCESS_LOG": str(var / "web-access.log"),
        "WEB_HOST": "127.0.0.1",
    }
    env.pop("DATABASE_URL", None)  # the scratch SQLite database, as the demo has it
    env.pop("HARNESS_STUDIO_PRODUCTION", None)
    drafts = prepare(env, args.clients)
    users = [User(username, draft_id) for username, draft_id in drafts.items()]
    print(
        f"machine: {os.cpu_count()} cores; {_load_average()} "
        "(other work on the machine shares them)"
    )
    if args.soak:
        soak(env, users, args)
    else:
        compare(env, users, args)


if __name__ == "__main__":
    main()
