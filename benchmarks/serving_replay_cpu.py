"""Deployment replay on this CPU: `transformers serve` + the complete agent, small case count.

Generates the evaluation world's replay set (110 cases, 10 warm-up + 100 measured
in order) once into --world, then runs `serving.service.replay_run` on the first
--warmup + --measured cases at each concurrency level and prints the Table-5-style
table. The full docs/architecture.md §10 run is `--warmup 10 --measured 100 --concurrency 1,2,4,8`
(hours on 2 CPU cores); the defaults are a small run that finishes in minutes.

    .venv/bin/python benchmarks/serving_replay_cpu.py                   # cpu-local, C=1,2, 1 + 8
    cases .venv/bin/python benchmarks/serving_replay_cpu.py --route cpu-tiny  # plumbing check,
    seconds
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import demo_harness_dir  # noqa: E402
from serving.endpoint import GenerationSettings  # noqa: E402
from serving.profiles import resolve_route  # noqa: E402
from serving.replay import ReplayPlan  # noqa: E402
from serving.service import replay_run  # noqa: E402


def main() -> int:
    signal.signal(
        signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum)
    )  # stop servers cleanly
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--route", default="cpu-local")
    parser.add_argument("--concurrency", default="1,2")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--measured", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--request-timeout", type=float, default=120.0)
    parser.add_argument(
        "--world", default=str(ROOT / "var" / "world"), help="where the world's sets are written"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "runs" / "serving"))
    parser.add_argument(
        "--trajectory-budget",
        type=float,
        help="replay a copy of the demo Harness with this trajectory budget (s); the "
        "report's 10 s assumes a GPU, and on a busy CPU no call finishes within it",
    )
    args = parser.parse_args()

    world = Path(args.world)
    cases = world / "replay.jsonl"
    if not cases.is_file():
        from evaluation.world.sets import generate

        print(f"generating the evaluation world (seed {args.seed}) into {world}", file=sys.stderr)
        generate(out=world, seed=args.seed)
    harness_dir = demo_harness_dir()
    if args.trajectory_budget is not None:
        harness_dir = _harness_with_budget(args.trajectory_budget, ROOT / "var" / "serving-harness")
    run_dir = replay_run(
        profile=resolve_route(args.route),
        harness_dir=harness_dir,
        cases_path=cases,
        plan=ReplayPlan(
            concurrency=tuple(int(c) for c in args.concurrency.split(",")),
            warmup=args.warmup,
            measured=args.measured,
            request_timeout_s=args.request_timeout,
        ),
        settings=GenerationSettings(temperature=1.0, top_p=0.95, max_tokens=args.max_tokens),
        out_root=args.out,
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )
    print((run_dir / "table.md").read_text(encoding="utf-8"))
    print(f"run folder: {run_dir}")
    return 0


def _harness_with_budget(budget_s: float, root: Path) -> Path:
    """The demo Harness with only prompt.yaml's trajectory_budget_s changed (a new digest)."""
    import yaml

    from harness import load_dir
    from harness.yamlio import yaml_data

    bundle = load_dir(demo_harness_dir())
    prompt = yaml_data(bundle.files["prompt.yaml"], file="prompt.yaml")
    prompt["constraints"]["trajectory_budget_s"] = budget_s
    variant = bundle.with_files(
        {"prompt.yaml": yaml.safe_dump(prompt, sort_keys=False, allow_unicode=True)}
    )
    path = root / f"budget-{budget_s:g}s"
    if path.exists():
        import shutil

        shutil.rmtree(path)
    variant.dump_dir(path)
    return path


if __name__ == "__main__":
    sys.exit(main())
