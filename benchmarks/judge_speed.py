"""Speed of the programmatic judge, before and after the rubric rebuild (issue 48), side by side in
one process (run by hand):

    .venv/bin/python benchmarks/judge_speed.py [--baseline COMMIT] [--repeat 3]

The judge runs inside RL rewards, so it must stay in milliseconds a case. The baseline is the
implementation at ``--baseline`` (default: the last commit before the rebuild), read from git
history at run time (``git show``) into a throw-away package; nothing of it is kept in the tree.
Both judges score the same cases:

- the dev-set's 482 labelled candidates (no trajectory), as ``evaluation calibrate`` does;
- every Live-Stream QA reference reply (978) with the ideal trajectory (the gold tool calls
  answered from the catalogue), as a run does.

It prints cases/s and ms per case of both, and how many verdicts differ.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evaluation.cases import load_cases
from evaluation.judges import ProgrammaticJudge
from evaluation.world.sets import generate
from harness.livestream.catalogue import Catalogue

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "73c2cde"  # the last commit with the old programmatic judge


def baseline_judge_class(commit: str, folder: Path):
    """The ProgrammaticJudge of ``commit``, imported from git history as ``baseline_judge``."""
    package = folder / "baseline_judge"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("evidence", "programmatic"):
        text = subprocess.run(
            ["git", "show", f"{commit}:evaluation/judges/{name}.py"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        text = text.replace(
            "from evaluation.judges import evidence as E",
            "from baseline_judge import evidence as E",
        )
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(folder))
    return importlib.import_module("baseline_judge.programmatic").ProgrammaticJudge


def ideal_trajectory(case: dict, catalogue: Catalogue) -> dict:
    """The gold tool calls, each answered with the product it names (what a right run records)."""
    calls = []
    for call in case["gold"].get("tool_calls", []):
        link = (call.get("arguments") or {}).get("link_id")
        product = catalogue.product(link) if isinstance(link, int) else None
        calls.append(
            {
                "name": call["name"],
                "arguments": call.get("arguments") or {},
                "binding": "",
                "result": product.to_dict() if product else None,
            }
        )
    return {"outcome": "replied", "skill_loads": [], "tool_calls": calls}


def timed(judge, items, repeat: int) -> tuple[float, list[tuple[int, float]]]:
    best, verdicts = float("inf"), []
    for _ in range(repeat):
        started = time.perf_counter()
        verdicts = [
            (v.accuracy, v.effectiveness)
            for v in (
                judge.judge(case=c, reply=r, route=route, trajectory=t) for c, r, route, t in items
            )
        ]
        best = min(best, time.perf_counter() - started)
    return best, verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--repeat", type=int, default=3, help="best of N passes (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        generate(out=tmp / "world", seed=0)
        catalogue = Catalogue.load(tmp / "world" / "catalogue.json")
        dev = [
            (case, cand["reply"], cand.get("route", "public"), None)
            for case in load_cases(tmp / "world" / "dev.jsonl")
            for cand in case["candidates"]
        ]
        live = [
            (
                case,
                case["gold"]["reference_reply"],
                "silent" if case["gold"]["route"] == "silent" else "public",
                ideal_trajectory(case, catalogue),
            )
            for case in load_cases(tmp / "world" / "live_qa.jsonl")
        ]
        Old = baseline_judge_class(args.baseline, tmp)
        started = time.perf_counter()
        new_judge = ProgrammaticJudge(catalogue=catalogue)
        setup_new = time.perf_counter() - started
        old_judge = Old(catalogue=catalogue)
        print(f"new judge setup (catalogue facts, once per catalogue): {1000 * setup_new:.1f} ms")
        print(
            f"{'cases':<44} {'n':>5} {'before c/s':>11} {'after c/s':>10} {'before ms':>10} "
            f"{'after ms':>9} {'differ':>7}"
        )
        for label, items in (
            ("dev-set candidates (seed 0, no trajectory)", dev),
            ("live QA references + ideal trajectory", live),
        ):
            old_s, old_v = timed(old_judge, items, args.repeat)
            new_s, new_v = timed(new_judge, items, args.repeat)
            differ = sum(a != b for a, b in zip(old_v, new_v, strict=True))
            n = len(items)
            print(
                f"{label:<44} {n:>5} {n / old_s:>11.0f} {n / new_s:>10.0f} "
                f"{1000 * old_s / n:>10.2f} {1000 * new_s / n:>9.2f} {differ:>7}"
            )


if __name__ == "__main__":
    main()
