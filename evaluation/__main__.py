"""Command line of the evaluation library: ``python -m evaluation <command> ...``.

generate  --out DIR --seed N                 synthetic world and every case set validate  FILE
check a case file (line-numbered errors) import    --source FILE --dest FILE          validate, then
copy (all or nothing) run       --harness DIR --set FILE --policy P --out RUN [--judge J]
[--concurrency N] [--limit N] report    RUN [--rejudge]                    rewrite a run's report
from its results (also unfinished runs) compare   RUN_A RUN_B [--out FILE.md]        paired
per-category deltas, bootstrap, newly failing calibrate --set DEVSET --judge J [--out DIR] judge vs
human labels: agreement, kappa, confusion edit-transfer --model NAME PARENT_RUN CANDIDATE_RUN
(twice)   a stage's edits on the held-out split
                                             under two models: error-count reduction and its
                                             interval
ifeval    --policy P [--limit N] [--source PATH] [--out DIR]
make-variant-set --set FILE --harness DIR --variants K --out OUT   (HSA, evaluation/variant_set.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.mcp_registry import add_trust_flag


def _cmd_generate(args: argparse.Namespace) -> int:
    from evaluation.world.sets import generate

    manifest = generate(out=args.out, seed=args.seed)
    print(f"wrote {args.out} (seed {args.seed}):")
    for info in manifest["sets"].values():
        v = info["variety"]
        print(
            f"  {info['file']:<24} {info['cases']:>5} cases, "
            f"{info['multi_comment']:>4} multi-comment, "
            f"distinct-1/2/3 {v['distinct_1']:.3f}/{v['distinct_2']:.3f}/{v['distinct_3']:.3f}, "
            f"unique comments {100 * v['unique_share']:.1f}%"
        )
    mix = manifest["sets"]["dev"]["category_mix_percent"]
    print("  dev-set intent mix (%): " + ", ".join(f"{k} {v}" for k, v in mix.items()))
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from evaluation.cases import CaseFileError, load_cases

    try:
        cases = load_cases(args.file)
    except CaseFileError as exc:  # readable, with bad lines: exit 1 (an unreadable file exits 2)
        print(exc, file=sys.stderr)
        return 1
    print(f"{args.file}: {len(cases)} valid cases")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from evaluation.cases import CaseFileError, import_cases

    try:
        count = import_cases(source=args.source, dest=args.dest)
    except CaseFileError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"imported {count} cases into {args.dest}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from evaluation.runner import RunConfigError, run_set

    try:
        outcome = run_set(
            harness_dir=args.harness,
            set_path=args.set,
            policy=args.policy,
            out=args.out,
            judge=args.judge,
            concurrency=args.concurrency,
            limit=args.limit,
            progress=not args.no_progress,
            max_new_tokens=args.max_new_tokens,
            trajectory_budget_s=args.trajectory_budget_s,
            trust_harness_commands=args.trust_harness_commands,
        )
    except (RunConfigError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from evaluation.summary import fallback_warning, outcome_line

    summary = outcome.summary
    overall = summary["overall"]
    print(
        f"{outcome.out}: ran {outcome.done}, resumed past {outcome.skipped}; "
        f"Accuracy {overall.get('accuracy', 0):.2f}, "
        f"Effectiveness {overall.get('effectiveness', 0):.2f}, "
        f"AVG {overall.get('avg', 0):.2f}; {outcome_line(summary)}; "
        f"report: {outcome.out / 'report.md'}"
    )
    if summary["mostly_fallback"]:
        print(f"warning: {fallback_warning(summary)}", file=sys.stderr)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from evaluation.runner import RESULTS, load_results, rejudge_run, write_report
    from harness.userfiles import read_json

    run = Path(args.run)
    rows = rejudge_run(run=run) if args.rejudge else load_results(run / RESULTS)
    if not rows:
        print(f"error: {run / RESULTS} holds no finished cases", file=sys.stderr)
        return 2
    config = read_json(run / "run.json", what="run record") if (run / "run.json").exists() else {}
    config["partial"] = len(rows) < int(config.get("cases") or len(rows))
    summary = write_report(out=run, rows=rows, config=config)
    print(
        f"{run}: report of {summary['n']} finished case(s) "
        "written to report.md, report.json, category_bars.png"
    )
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from evaluation.compare import compare_runs, comparison_markdown

    result = compare_runs(run_a=args.run_a, run_b=args.run_b, resamples=args.resamples)
    text = comparison_markdown(result)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(
            json.dumps(result, indent=2) + "\n", encoding="utf-8"
        )
    print(text)
    return 1 if result["regressed_categories"] and args.fail_on_regression else 0


def _cmd_edit_transfer(args: argparse.Namespace) -> int:
    from evaluation.compare import run_rows
    from evaluation.edit_transfer import edit_transfer, edit_transfer_markdown

    if len(args.model) != 2:
        print(
            "error: --model: give exactly two (NAME PARENT_RUN "
            f"CANDIDATE_RUN each), got {len(args.model)}",
            file=sys.stderr,
        )
        return 2
    models = {
        name: (run_rows(parent), run_rows(candidate)) for name, parent, candidate in args.model
    }
    try:
        result = edit_transfer(models=models, split=None, resamples=args.resamples)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = edit_transfer_markdown(result)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(
            json.dumps(result, indent=2) + "\n", encoding="utf-8"
        )
    print(text)
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    """A calibration file (hs-calibration/1: people's labels, split in dev and held-out) gives the
    agreement per part with intervals; a case set with labelled candidates (the generated dev-set)
    gives the old single table, said to be generated labels."""
    from evaluation.calibration import (
        CalibrationFileError,
        calibrate_judge,
        calibrate_parts,
        calibration_markdown,
        is_calibration_file,
        parts_markdown,
        read_calibration_file,
    )
    from evaluation.cases import load_cases
    from evaluation.judges import make_judge
    from evaluation.runner import _demo_catalogue, resolve_catalogue

    set_path = Path(args.set)
    if is_calibration_file(set_path):
        try:
            calibration = read_calibration_file(set_path)
        except CalibrationFileError as exc:
            print(f"error: --set: {exc}", file=sys.stderr)
            return 2
        judge = make_judge(args.judge, catalogue=calibration.catalogue)
        report = calibrate_parts(calibration=calibration, judge=judge)
        text = parts_markdown(report)
    else:
        cases = load_cases(set_path)
        catalogue = resolve_catalogue(set_path, cases) or _demo_catalogue()
        report = calibrate_judge(cases=cases, judge=make_judge(args.judge, catalogue=catalogue))
        text = calibration_markdown(report) + (
            "\nThese labels came with the case file (a generated dev-set's are generated with "
            "its defects): they measure the judge against its generator, not against people. "
            "A calibration file (data/calibration/) holds people's labels.\n"
        )
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "calibration.md").write_text(text, encoding="utf-8")
        (out / "calibration.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(text)
    return 0


def _cmd_ifeval(args: argparse.Namespace) -> int:
    from evaluation.ifeval import ifeval_answerer, load_ifeval_prompts, run_ifeval
    from harness.policies import role_model

    prompts = load_ifeval_prompts(
        source=args.source, limit=args.limit
    )  # a missing file is said before a model loads
    generate = ifeval_answerer(
        role_model("ifeval", args.policy), max_new_tokens=args.max_new_tokens
    )
    responses = None
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        responses = args.out / "responses.jsonl"
    result = run_ifeval(
        generate=generate,
        source=args.source,
        limit=args.limit,
        prompts=prompts,
        progress=not args.no_progress,
        responses_path=responses,
    )
    print(
        result.summary()
        + f" ({result.seconds:.0f} s, {result.seconds / result.n_prompts:.1f} s/prompt)"
    )
    print(
        "per family (strict, instruction level): "
        + ", ".join(f"{k} {100 * v:.0f}" for k, v in result.per_family_strict.items())
    )
    if args.out:
        out = Path(args.out)
        data = result.to_dict()
        data["policy"] = args.policy
        (out / "ifeval.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("generate", help="write the synthetic world and every case set")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(fn=_cmd_generate)
    p = sub.add_parser("validate", help="check a case file")
    p.add_argument("file", type=Path)
    p.set_defaults(fn=_cmd_validate)
    p = sub.add_parser("import", help="validate a case file, then copy it (all or nothing)")
    p.add_argument("--source", required=True, type=Path)
    p.add_argument("--dest", required=True, type=Path)
    p.set_defaults(fn=_cmd_import)
    p = sub.add_parser("run", help="run a set through the runtime and judge it (resumable)")
    p.add_argument(
        "--harness",
        required=True,
        type=Path,
        help="Harness folder (e.g. harness/demo/livestream-avatar)",
    )
    p.add_argument("--set", required=True, type=Path, help="case file (JSONL)")
    p.add_argument(
        "--policy", required=True, help="local | tiny | openai:BASE_URL:MODEL | scripted:FILE"
    )
    p.add_argument(
        "--out", required=True, type=Path, help="run folder; rerun with the same folder to resume"
    )
    p.add_argument(
        "--judge",
        default="programmatic",
        help="programmatic | llm:BASE_URL:MODEL | llm:POLICY_SPEC | panel:A|B|C",
    )
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--limit", type=int, default=None, help="only the first N cases")
    p.add_argument(
        "--max-new-tokens", type=int, default=None, help="per model call (default: the policy's)"
    )
    p.add_argument(
        "--trajectory-budget-s",
        type=float,
        default=None,
        help="override the Harness's trajectory budget (e.g. for a slow CPU); recorded in run.json",
    )
    p.add_argument("--no-progress", action="store_true")
    add_trust_flag(p)
    p.set_defaults(fn=_cmd_run)
    p = sub.add_parser(
        "report", help="(re)write a run's report from its results, e.g. of an unfinished run"
    )
    p.add_argument("run", type=Path)
    p.add_argument(
        "--rejudge",
        action="store_true",
        help="score the stored replies and trajectories "
        "again with the run's judge (no model calls)",
    )
    p.set_defaults(fn=_cmd_report)
    p = sub.add_parser("compare", help="paired per-category comparison of two runs")
    p.add_argument("run_a", type=Path, help="baseline run folder")
    p.add_argument("run_b", type=Path, help="candidate run folder")
    p.add_argument(
        "--out", type=Path, default=None, help="write Markdown here (and .json beside it)"
    )
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument(
        "--fail-on-regression", action="store_true", help="exit 1 when a category regressed"
    )
    p.set_defaults(fn=_cmd_compare)
    p = sub.add_parser(
        "edit-transfer",
        help="the held-out edit benchmark: a stage's edits under two models",
        description="Error-count reduction of a Harness edit (parent version -> candidate) on the "
        "held-out split under two models, each with its bootstrap interval, and their "
        "difference. Each run folder is 'evaluation run' of one version under one model "
        "on the same held-out case file.",
    )
    p.add_argument(
        "--model",
        nargs=3,
        action="append",
        default=[],
        metavar=("NAME", "PARENT_RUN", "CANDIDATE_RUN"),
        help="a model's two runs: under the parent version "
        "and under the edited candidate (give two)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="write Markdown here (and .json beside it)"
    )
    p.add_argument("--resamples", type=int, default=10_000)
    p.set_defaults(fn=_cmd_edit_transfer)
    p = sub.add_parser(
        "calibrate",
        help="judge agreement with people's labels: a calibration file (data/calibration/), per "
        "part (dev, held-out), with 95%% intervals; or a case set's labelled candidates",
    )
    p.add_argument("--set", required=True, type=Path)
    p.add_argument("--judge", default="programmatic")
    p.add_argument("--out", type=Path, default=None)
    p.set_defaults(fn=_cmd_calibrate)
    p = sub.add_parser("ifeval", help="instruction following with lm-eval's IFEval checkers")
    p.add_argument("--policy", required=True)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument(
        "--source",
        default=None,
        help="JSONL path in the official format, google/IFEval (through `datasets`), or "
        "generated[:SEED] (default: $HARNESS_IFEVAL_PATH, else the project's generated "
        "instruction-following set, seed 0, built and scored by the same checkers)",
    )
    p.add_argument("--max-new-tokens", type=int, default=512)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(fn=_cmd_ifeval)
    from evaluation.variant_set import register as register_variant_set

    register_variant_set(sub)  # make-variant-set (HSA, harness/augment)
    return parser


def main(argv: list[str] | None = None) -> int:
    from evaluation.cases import CaseFileError
    from evaluation.judges import JudgeSpecError
    from harness.checkpoints import CheckpointError
    from harness.livestream import DocumentValidationError
    from harness.userfiles import InputFileError

    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (
        InputFileError,
        CaseFileError,
        DocumentValidationError,
        CheckpointError,
        FileNotFoundError,
        JudgeSpecError,
    ) as exc:  # a path, file or judge spec the user gave: one line, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
