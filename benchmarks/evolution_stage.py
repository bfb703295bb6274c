"""One evolution stage end to end through the studio's services, timed: the figures of issue 7.

Runs in a private, temporary studio (its own SQLite database and var folder,
jobs inline): imports the seeded 482-case dev-set, starts an evolution on an
even-spread subset with the chosen policy, evaluates the base version,
diagnoses with the rule-based diagnoser, accepts every valid proposal as a
reviewer, commits the candidate, evaluates it and prints the paired report
(Accuracy / Effectiveness / AVG before and after, per category, bootstrap
interval) with the wall time of each step.

    .venv/bin/python benchmarks/evolution_stage.py --policy local --cases 100
    .venv/bin/python benchmarks/evolution_stage.py --policy scripted --cases 100 --plant-defect

``--policy local`` is the default local model (SmolLM2-135M-Instruct on CPU), or
with ``--checkpoint DIR`` a trained checkpoint of it;
``scripted`` is the shortcut script of studio/evolution/scripted.py; ``tiny``
the 2-layer random model. ``--plant-defect`` starts from the demo Harness
without its price grounding (item_qa's fetch-before-facts rule, the
price-needs-tool and numbers-grounded hooks).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _setup(var: Path) -> None:
    os.environ["HARNESS_STUDIO_VAR"] = str(var)
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policy", choices=["local", "scripted", "tiny"], default="local")
    parser.add_argument(
        "--cases", type=int, default=100, help="size of the even-spread dev-set subset"
    )
    parser.add_argument("--seed", type=int, default=7, help="world seed of the dev-set")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        help="with --policy local: a checkpoint folder (e.g. a training run's final/) instead of "
        "the default model",
    )
    parser.add_argument(
        "--plant-defect", action="store_true", help="start from the Harness without price grounding"
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    var = Path(tempfile.mkdtemp(prefix="evolution-bench-"))
    _setup(var)
    from django.db import transaction

    from evaluation.diagnosis.planted import without_price_grounding
    from harness import demo_harness_dir, read_dir
    from studio.accounts.roles import ADMIN, REVIEWER
    from studio.accounts.services import roles_ensure, user_create
    from studio.endpoints.models import ModelEndpoint
    from studio.evolution.models import EvalRun, Proposal, Stage
    from studio.evolution.services.decisions import proposal_review
    from studio.evolution.services.diagnosis import diagnosis_start
    from studio.evolution.services.seeding import evolution_demo_seed
    from studio.evolution.services.stages import candidate_build, evolution_start
    from studio.harnesses.services import harness_import

    roles_ensure()
    admin = user_create(username="bench-admin", password="x" * 12, roles=[ADMIN])
    reviewer = user_create(username="bench-reviewer", password="x" * 12, roles=[REVIEWER])
    from studio.mcpservers.services import mcp_server_ensure_demo

    mcp_server_ensure_demo(
        actor=admin
    )  # the demo Harness names the marketing server; the studio must know it
    timings: dict[str, float] = {}
    started = time.perf_counter()
    seed = evolution_demo_seed(actor=admin, seed=args.seed, sets=("dev",), folder=var / "sets")
    files, _ = read_dir(demo_harness_dir())
    version = harness_import(
        files=without_price_grounding(files) if args.plant_defect else files,
        author=admin,
        message="benchmark base",
    ).version
    if args.policy == "scripted":
        endpoint = seed.endpoint
    else:
        model = str(args.checkpoint.resolve()) if args.checkpoint and args.policy == "local" else ""
        endpoint = ModelEndpoint.objects.create(
            name=f"bench-{args.policy}", route=args.policy, model=model
        )
    timings["setup_s"] = time.perf_counter() - started

    from studio.evolution.models import Dataset

    step = time.perf_counter()
    with transaction.atomic():
        evolution = evolution_start(
            name="benchmark",
            version=version,
            dataset=Dataset.objects.get(name="dev-482"),
            endpoint=endpoint,
            actor=admin,
            limit=args.cases,
        )
    stage = Stage.objects.get(evolution=evolution)
    base = EvalRun.objects.get(pk=stage.parent_run_id)
    timings["evaluate_base_s"] = time.perf_counter() - step
    print(
        f"base v{version.number}: {base.status}, {json.dumps(base.summary.get('overall'))}",
        flush=True,
    )

    step = time.perf_counter()
    with transaction.atomic():
        diagnosis = diagnosis_start(stage=stage, actor=admin)
    diagnosis.refresh_from_db()
    timings["diagnose_s"] = time.perf_counter() - step
    proposals = list(diagnosis.proposals.all())
    for proposal in proposals:
        print(
            f"proposal {proposal.index + 1} [{proposal.diagnoser}] "
            f"valid={proposal.valid}: {proposal.title} "
            f"-> {len(proposal.target_case_ids)} case(s), {proposal.prediction or 'not replayed'}; "
            f"{'; '.join(proposal.summary)}",
            flush=True,
        )
        if proposal.valid:
            proposal_review(proposal=proposal, actor=reviewer, accept=True)
    if diagnosis.finding:
        print(f"finding: {diagnosis.finding}", flush=True)
    if not any(p.status == Proposal.ACCEPTED for p in proposals):
        print("no valid proposal: the stage ends here")
        return
    step = time.perf_counter()
    with transaction.atomic():
        candidate_build(stage=Stage.objects.get(pk=stage.pk), actor=reviewer)
    stage.refresh_from_db()
    timings["evaluate_candidate_s"] = time.perf_counter() - step
    timings["total_s"] = time.perf_counter() - started
    report = stage.comparison
    print(
        f"candidate v{stage.candidate_version.number}: "
        f"{json.dumps(stage.candidate_run.summary.get('overall'))}"
    )
    for scope, block in [
        ("overall", report["overall"]),
        *report["per_split"].items(),
        *report["per_category"].items(),
    ]:
        print(
            f"  {scope:<20} n={block['n']:<4} "
            + "  ".join(
                f"{m[:3]} {block[m]['parent']:6.2f} -> {block[m]['candidate']:6.2f} "
                f"({block[m]['delta']:+.2f} [{block[m]['low']:+.2f}, {block[m]['high']:+.2f}])"
                for m in ("accuracy", "effectiveness", "avg")
            )
        )
    print(
        f"  newly passing {len(report['newly_passing'])}, "
        f"newly failing {len(report['newly_failing'])}"
    )
    for p in report["proposals"]:
        print(f"  proposal '{p['title']}': fixed {p['fixed']} of {p['targeted']} targeted case(s)")
    print("timings: " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "policy": args.policy,
                    "cases": args.cases,
                    "plant_defect": args.plant_defect,
                    "base": base.summary,
                    "candidate": stage.candidate_run.summary,
                    "report": report,
                    "timings": timings,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
