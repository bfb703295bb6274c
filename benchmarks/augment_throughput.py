"""Throughput of Harness-State Augmentation, printed as figures (run by hand).

    .venv/bin/python benchmarks/augment_throughput.py [--share 8] [--workers N] [--also-unshared]

Builds the 978-case Harness-Variant set (one variant per case) from the
generated Live-Stream QA set and the demo Harness, and prints wall time, CPU
seconds (this process and its workers), the split between augmenting and
writing, and the machine's load average, since on a shared machine wall time
says more about the neighbours than about the code. Also times one variant
alone, split by family, render and validation. Target: under 10 s for the set.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from evaluation.variant_set import make_variant_set
from evaluation.world.sets import generate
from harness import demo_harness_dir, load_dir, load_mapping
from harness.augment import HarnessMapping, Requirements
from harness.augment.context import AugmentContext
from harness.augment.editable import Draft
from harness.augment.pipeline import _APPLY, _ORDER, default_envelope


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def per_variant(samples: int = 30) -> dict[str, float]:
    bundle = load_dir(demo_harness_dir())
    totals: dict[str, float] = {}
    for seed in range(samples):
        ctx = AugmentContext(
            draft=Draft(bundle),
            seed=seed,
            envelope=default_envelope(),
            requirements=Requirements(),
            mapping=HarnessMapping(),
        )
        for dim in _ORDER:
            t = time.process_time()
            _APPLY[dim](ctx)
            totals[dim] = totals.get(dim, 0) + time.process_time() - t
        t = time.process_time()
        files = ctx.draft.render()
        totals["render"] = totals.get("render", 0) + time.process_time() - t
        t = time.process_time()
        load_mapping(files)
        totals["validate"] = totals.get("validate", 0) + time.process_time() - t
    return {k: 1000 * v / samples for k, v in totals.items()}


def build(set_path: Path, out: Path, *, share: int, workers: int | None) -> None:
    load1 = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), cpu_seconds()
    manifest = make_variant_set(
        set_path=set_path,
        harness_dir=demo_harness_dir(),
        variants=1,
        out=out,
        share=share,
        workers=workers,
        force=True,
    )
    wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
    t = manifest["timings"]
    verdict = "within" if wall < 10 else "over"
    print(
        f"  share={share}: {manifest['cases']} cases, {manifest['distinct_harnesses']} distinct "
        f"variants, {t['workers']} worker(s): wall {wall:.2f} s ({verdict} the 10 s target), "
        f"CPU {cpu:.2f} s, augment {t['augment_s']:.2f} s + write {t['write_s']:.2f} s, "
        f"load average {load1:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--share", type=int, default=8, help="cases per shared variant")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument(
        "--also-unshared",
        action="store_true",
        help="also build with a distinct variant for every case (share=1)",
    )
    args = parser.parse_args()
    split = per_variant()
    print(
        "one variant of the demo Harness, CPU ms: "
        + ", ".join(f"{k} {v:.1f}" for k, v in split.items())
        + f"; total {sum(split.values()):.1f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        generate(out=root / "world", seed=0)
        print("978-case Harness-Variant set from live_qa.jsonl, one variant per case:")
        build(root / "world" / "live_qa.jsonl", root / "t2", share=args.share, workers=args.workers)
        if args.also_unshared:
            build(
                root / "world" / "live_qa.jsonl",
                root / "t2-unshared",
                share=1,
                workers=args.workers,
            )


if __name__ == "__main__":
    main()
