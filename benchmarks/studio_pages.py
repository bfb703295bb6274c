"""Benchmark: how fast the studio's version-diff and editor pages answer for a big Harness.

Builds a Harness of 200 skills with 500 versions (each version changes one
skill rule, as an operator would) in a scratch SQLite database under var/
(or the database DATABASE_URL names), then times the pages in-process with
Django's test client, which includes URL routing, permission checks, queries
and template rendering but no network. Prints median and p95 per page.

    .venv/bin/python benchmarks/studio_pages.py [--skills 200] [--versions 500] [--samples 60]
    .venv/bin/python benchmarks/studio_pages.py --only training [--training-runs 50]
    [--metric-points 10000]

Target (issue 6): p95 under 200 ms for the diff and editor pages.

The training part (issue 18) writes 50 run folders of 10,000 metrics.jsonl rows each (SFT-like and
RL-like metrics) and times the dashboard's JSON (first view of each run: the file parsed into
columns and downsampled; first view in a fresh process: the curves kept beside the metrics as JSON
text, as a run's job leaves them; repeat views: from memory), the run page, the run list and the
checkpoint registry, beside the job list measured in the same process as the baseline. Target (issue
18): dashboard p95 under 300 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _setup_django(database: Path) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    if not os.environ.get("DATABASE_URL"):
        database.unlink(missing_ok=True)
        os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    call_command("migrate", verbosity=0)


SKILL = """---
name: {name}
description: Synthetic {kind} skill number {i} for the benchmark; use when the viewer asks about topic {i}.
kind: {kind}
metadata:
  version: "1.0"
---
# {name}

## Rules

{rules}
"""  # noqa: E501 (a skill file's front matter: its description is one line)


def _skill_text(name: str, kind: str, i: int, rules: int = 8) -> str:
    body = "\n".join(
        f"- Rule {r} of {name}: check the tool result "
        f"for topic {i} before saying anything about it, "
        f"and keep the reply under the length limit. {{#r{r}}}"
        for r in range(1, rules + 1)
    )
    return SKILL.format(name=name, kind=kind, i=i, rules=body)


def build_files(skills: int) -> dict[str, str]:
    from harness import demo_harness_dir, load_dir

    files = dict(load_dir(demo_harness_dir()).files)
    manifest = files["manifest.yaml"].replace("name: livestream-avatar", "name: bench-avatar", 1)
    files["manifest.yaml"] = manifest
    existing = sum(1 for p in files if p.endswith("/SKILL.md"))
    for i in range(skills - existing):
        name = f"synthetic_{i:03d}"
        files[f"skills/{name}/SKILL.md"] = _skill_text(name, "strategy" if i % 2 else "reply", i)
    return files


def build_history(*, skills: int, versions: int, seed: int = 7):
    """v1 through the real service (validated); later versions stored the same way, in bulk."""
    from django.db import transaction

    from harness import files_digest
    from studio.accounts.roles import ADMIN, OPERATOR
    from studio.accounts.services import user_create
    from studio.harnesses.bundles import bundle_load, bundle_summary
    from studio.harnesses.models import HarnessVersion
    from studio.harnesses.services import blobs_store, draft_create, harness_import
    from studio.mcpservers.services import mcp_server_ensure_demo

    # the demo Harness names the marketing server, as seed_demo registers it
    mcp_server_ensure_demo()
    operator = user_create(username="bench-operator", password="bench", roles=[OPERATOR, ADMIN])
    files = build_files(skills)
    first = harness_import(files=files, author=operator, message="v1").version
    summary = bundle_summary(bundle_load(files)).to_dict()
    rng = random.Random(seed)
    skill_paths = sorted(p for p in files if p.startswith("skills/synthetic_"))
    parent = first
    with transaction.atomic():
        for number in range(2, versions + 1):
            path = rng.choice(skill_paths)
            files = dict(files)
            files[path] = (
                files[path].rstrip("\n")
                + f"\n- Added in v{number}: never promise a delivery date. {{#v{number}}}\n"
            )
            parent = HarnessVersion.objects.create(
                harness=first.harness,
                number=number,
                parent=parent,
                digest=files_digest(files),
                tree=blobs_store(files=files),
                message=f"edit {path}",
                author=operator,
                summary=summary,
            )
    draft = draft_create(
        harness=first.harness, base_version=parent, owner=operator, title="bench draft"
    )
    return operator, first.harness, draft, skill_paths


def _time(client, url: str) -> float:
    started = time.perf_counter()
    response = client.get(url)
    elapsed = time.perf_counter() - started
    if response.status_code != 200:
        raise SystemExit(f"GET {url} answered {response.status_code}")
    return elapsed * 1000


def _report(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return (
        f"{name:<44} n={len(samples):<4} median "
        f"{statistics.median(samples):7.1f} ms   p95 {p95:7.1f} ms"
    )


def build_training_runs(*, runs: int, points: int, folder: Path, owner, seed: int = 7) -> list:
    """``runs`` finished SFT runs, each folder with ``points`` metrics rows, a final model's files
    and its card."""
    import json
    import math
    import shutil

    from studio.jobs.models import Job
    from studio.training.models import TrainingRun

    shutil.rmtree(folder, ignore_errors=True)
    rng = random.Random(seed)
    made = []
    for index in range(runs):
        run_dir = folder / f"run-{index}"
        stage = run_dir / "sft"
        (stage / "final").mkdir(parents=True)
        (stage / "final" / "config.json").write_text("{}")
        rl_like = index % 2 == 1
        with (stage / "metrics.jsonl").open("w") as handle:
            for step in range(1, points + 1):
                row = {
                    "stage": "rl" if rl_like else "sft",
                    "step": step,
                    "time": f"2026-12-01T{step // 3600 % 24:02d}:{step // 60 % 60:02d}:"
                    f"{step % 60:02d}+00:00",
                    "loss": 2.5 * math.exp(-step / 3000) + rng.random() * 0.2,
                    "learning_rate": 2e-4 * (1 - step / points),
                    "grad_norm": 1 + rng.random(),
                    "tokens_per_s": 400 + rng.random() * 20,
                    "epoch": step / 100,
                }
                if rl_like:
                    row.update(
                        {
                            f"rewards/{d}/mean": rng.random()
                            for d in (
                                "accuracy",
                                "effectiveness",
                                "tool_rationality",
                                "skill_selection",
                            )
                        }
                    )
                    row.update(
                        {
                            "kl": rng.random() * 0.01,
                            "completions/mean_length": 40 + rng.random() * 20,
                            "frac_reward_zero_std": rng.random() * 0.5,
                        }
                    )
                handle.write(json.dumps(row) + "\n")
        card = {
            "stage": "sft",
            "base_model": "/models/SmolLM2-135M-Instruct",
            "parent_checkpoint": "local",
            "data": {"n_examples": 418, "hsa_variants": 0},
            "harness_name": "livestream-avatar",
            "harness_digest": "0" * 64,
            "steps": points,
            "wall_time_s": 3600.0,
            "trainer": "trl.SFTTrainer",
        }
        (stage / "model_card.json").write_text(json.dumps(card))
        job = Job.objects.create(
            kind="train_sft",
            title=f"bench {index}",
            status=Job.SUCCEEDED,
            progress=100,
            params={},
            created_by=owner,
        )
        made.append(
            TrainingRun.objects.create(
                kind="sft",
                title=f"bench run {index}",
                folder=str(run_dir),
                config_digest=f"{index:064x}",
                steps=[
                    {
                        "name": "sft",
                        "argv": ["training", "sft", "--config", str(run_dir / "sft.yaml")],
                        "config_file": "sft.yaml",
                        "output": "sft",
                    }
                ],
                config={"sft": {"max_steps": points, "model": "local"}},
                model="local",
                job=job,
                created_by=owner,
                summary={"model_card": card},
            )
        )
        job.params = {"run_id": made[-1].pk}
        job.save(update_fields=["params"])
    return made


def time_training_pages(*, runs: int, points: int, samples: int, seed: int) -> None:
    from django.test import Client

    from studio.accounts.roles import ML_ENGINEER
    from studio.accounts.services import user_create

    engineer = user_create(username="bench-ml", password="bench", roles=[ML_ENGINEER])
    started = time.perf_counter()
    made = build_training_runs(
        runs=runs,
        points=points,
        folder=ROOT / "var" / "bench-training-runs",
        owner=engineer,
        seed=seed,
    )
    print(
        f"built {runs} training runs x {points} metric "
        f"points in {time.perf_counter() - started:.1f} s"
    )
    client = Client()
    client.force_login(engineer)
    rng = random.Random(seed + 2)
    for _ in range(3):  # warm imports, template cache, connection
        _time(client, "/jobs/")
        _time(client, "/training/")
    first = [_time(client, f"/training/runs/{run.pk}/metrics.json") for run in made]
    from django.core.cache import caches

    # a web process that never saw these runs' metrics: the curves their first view kept in the
    # studio's cache (on Redis, shared by every web process; what a run's job computes when it ends)
    # instead of the 10,000 rows
    caches["local"].clear()
    kept = [_time(client, f"/training/runs/{run.pk}/metrics.json") for run in made]
    repeat = [
        _time(client, f"/training/runs/{rng.choice(made).pk}/metrics.json") for _ in range(samples)
    ]
    page = [_time(client, f"/training/runs/{rng.choice(made).pk}/") for _ in range(samples)]
    listing = [_time(client, "/training/") for _ in range(samples // 3)]
    registry = [_time(client, "/training/checkpoints/") for _ in range(samples // 3)]
    baseline = [_time(client, "/jobs/") for _ in range(samples)]
    response = client.get(f"/training/runs/{made[1].pk}/metrics.json")
    data = response.json()
    drawn = sum(len(s["points"]) for c in data["charts"] for s in c["series"])
    read = sum(s["n"] for c in data["charts"] for s in c["series"])
    print(
        f"dashboard of an RL-like run: {len(data['charts'])} "
        f"charts, {read} points read, {drawn} sent "
        f"({len(response.content) / 1024:.0f} KiB)"
    )
    print(_report("baseline: job list (same process)", baseline))
    print(_report("dashboard JSON, first view, metrics parsed", first))
    print(_report("dashboard JSON, first view, kept curves", kept))
    print(_report("dashboard JSON, repeat views", repeat))
    print(_report("run page (dashboard shell, commands, YAML)", page))
    print(_report(f"run list ({runs} runs)", listing))
    print(_report(f"checkpoint registry ({runs} checkpoints)", registry))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skills", type=int, default=200, help="skills in the Harness")
    parser.add_argument("--versions", type=int, default=500, help="versions in its history")
    parser.add_argument("--samples", type=int, default=60, help="requests timed per page")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", choices=("harness", "training"), help="time one part only")
    parser.add_argument(
        "--training-runs", type=int, default=50, help="training runs with dashboards"
    )
    parser.add_argument(
        "--metric-points", type=int, default=10_000, help="metrics.jsonl rows per run"
    )
    args = parser.parse_args()

    _setup_django(ROOT / "var" / "bench-studio.sqlite3")
    from django.conf import settings
    from django.test import Client

    settings.ALLOWED_HOSTS = ["*"]
    settings.TRAINING_RUNS_DIR = ROOT / "var" / "bench-training-runs"
    if args.only != "harness":
        time_training_pages(
            runs=args.training_runs, points=args.metric_points, samples=args.samples, seed=args.seed
        )
    if args.only == "training":
        return
    started = time.perf_counter()
    operator, harness, draft, skill_paths = build_history(
        skills=args.skills, versions=args.versions, seed=args.seed
    )
    print(
        f"built {harness.name}: {args.skills} skills, {args.versions} "
        f"versions in {time.perf_counter() - started:.1f} s"
    )

    client = Client()
    client.force_login(operator)
    rng = random.Random(args.seed + 1)
    name = harness.name
    for _ in range(3):  # warm imports, template cache, connection
        _time(client, f"/h/{name}/diff/?a=1&b=2")
        _time(client, f"/drafts/{draft.pk}/")

    consecutive = [rng.randint(2, args.versions) for _ in range(args.samples)]
    lazy = consecutive[: len(consecutive) // 2]
    lazy_diff = [_time(client, f"/h/{name}/diff/?a={n - 1}&b={n}") for n in lazy]
    summaries = [_time(client, f"/h/{name}/diff/summary/?a={n - 1}&b={n}") for n in lazy]
    # A commit through the studio stores the summary against the parent; the bulk
    # history above skipped that, so store it now for the versions we time, the
    # same way harness_version_create does.
    from studio.harnesses.bundles import bundle_load
    from studio.harnesses.diffs import summary_against_parent
    from studio.harnesses.models import HarnessVersion
    from studio.harnesses.selectors import version_files

    fresh = [rng.randint(2, args.versions) for _ in range(args.samples)]
    for n in set(fresh):
        version = HarnessVersion.objects.get(harness=harness, number=n)
        summary = summary_against_parent(
            parent=version.parent, bundle=bundle_load(version_files(version=version))
        )
        HarnessVersion.objects.filter(pk=version.pk).update(parent_summary=summary)
    cold_diff = [_time(client, f"/h/{name}/diff/?a={n - 1}&b={n}") for n in fresh]
    warm_diff = [_time(client, f"/h/{name}/diff/?a={n - 1}&b={n}") for n in fresh]
    split_diff = [_time(client, f"/h/{name}/diff/?a={n - 1}&b={n}&mode=split") for n in fresh]
    far = [
        (rng.randint(1, args.versions // 2), rng.randint(args.versions // 2 + 1, args.versions))
        for _ in range(args.samples // 3)
    ]
    far_diff = [_time(client, f"/h/{name}/diff/?a={a}&b={b}") for a, b in far]
    far_summaries = [_time(client, f"/h/{name}/diff/summary/?a={a}&b={b}") for a, b in far]
    editor = [
        _time(client, f"/drafts/{draft.pk}/?path={rng.choice(skill_paths)}")
        for _ in range(args.samples)
    ]
    editor_top = [
        _time(client, f"/drafts/{draft.pk}/?path=hooks.yaml") for _ in range(args.samples // 3)
    ]
    history = [_time(client, f"/h/{name}/") for _ in range(args.samples // 3)]

    save_ms = []
    for _ in range(max(5, args.samples // 6)):
        draft.refresh_from_db()
        path = rng.choice(skill_paths)
        text = (
            draft.files[path] + "- Benchmark edit. {#bench}\n"
            if "{#bench}" not in draft.files[path]
            else draft.files[path].replace("- Benchmark edit. {#bench}\n", "")
        )
        t0 = time.perf_counter()
        response = client.post(
            f"/drafts/{draft.pk}/save/", {"path": path, "text": text, "revision": draft.revision}
        )
        save_ms.append((time.perf_counter() - t0) * 1000)
        assert response.status_code == 302, response.status_code

    print(_report("diff page, version vs parent (first view)", cold_diff))
    print(_report("diff page, version vs parent (repeat view)", warm_diff))
    print(_report("diff page, no stored summary (first view)", lazy_diff))
    print(_report("  + its change summary (htmx, on demand)", summaries))
    print(_report("diff page, side by side", split_diff))
    print(_report("diff page, far-apart versions (first view)", far_diff))
    print(_report("  + its change summary (htmx, on demand)", far_summaries))
    print(_report("editor page, a skill file", editor))
    print(_report("editor page, hooks.yaml (catalogue panel)", editor_top))
    print(_report("Harness page (versions list)", history))
    print(_report("editor save (validates the whole bundle)", save_ms))
    database = settings.DATABASES["default"]
    print(f"database: {database['ENGINE'].rsplit('.', 1)[-1]} {database['NAME']}")


if __name__ == "__main__":
    main()
