"""``python -m training``: the stages, the pipeline, data building, evaluation and the ablation.

Every stage command takes ``--config FILE`` (YAML or JSON) and, for each field
of its config dataclass, a ``--field-name VALUE`` flag that overrides the file;
``--help`` lists the fields with their help texts.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from harness.config_schema import ConfigError, add_flags, from_flags, load_config


def _build(cls: type, args: argparse.Namespace, base: Any = None):
    """The config of ``--config FILE`` (else ``base``, else the defaults) with the flags given over
    it."""
    if getattr(args, "config", None):
        base = load_config(cls, args.config)
    return from_flags(cls, args, base=base)


def build_parser() -> argparse.ArgumentParser:
    from training.ablation import PRESETS, AblationConfig
    from training.eval_config import EvalConfig
    from training.opd_config import OPDStageConfig
    from training.pipeline_config import PipelineConfig
    from training.rl_config import RLStageConfig
    from training.sft_config import SFTStageConfig

    parser = argparse.ArgumentParser(prog="python -m training", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, cls, text in (
        ("sft", SFTStageConfig, "Stage 1: HSA-SFT (hsa_variants 0 = Fixed-Harness SFT)"),
        ("opd", OPDStageConfig, "Stage 2: General on-policy distillation to the base model"),
        ("rl", RLStageConfig, "Stage 3: HSA-RL with GRPO in the live-room simulator"),
        ("data", SFTStageConfig, "Build stage-1 examples only (writes --out JSONL)"),
    ):
        p = sub.add_parser(name, help=text, description=text)
        p.add_argument("--config", help="YAML or JSON file with the config fields")
        if name == "data":
            p.add_argument("--out", required=True, help="examples JSONL to write")
        add_flags(p, cls)
    from training.robustness import RobustnessConfig

    text = "Round-1 decisions on held-out cases under seen and unseen Harness states, per family"
    p = sub.add_parser("robustness-check", help=text, description=text)
    p.add_argument("--config", help="YAML or JSON file with the config fields")
    add_flags(p, RobustnessConfig)
    from training.mtp_config import MTPStageConfig

    text = "MTP draft-head adaptation: the policy frozen, the head trained on its own rollouts"
    p = sub.add_parser("mtp", help=text, description=text)
    p.add_argument("--config", help="YAML or JSON file with the config fields")
    add_flags(p, MTPStageConfig)
    p = sub.add_parser("pipeline", help="SFT -> OPD -> RL, resumable stage by stage")
    p.add_argument("--config", help="YAML or JSON: top-level fields plus sft:, opd:, rl: sections")
    add_flags(p, PipelineConfig)
    p = sub.add_parser(
        "ablation", help="Table-4-like ablation: Base, Fixed SFT, HSA-SFT, +OPD, +RL"
    )
    p.add_argument("--preset", default="cpu-small", choices=sorted(PRESETS))
    p.add_argument(
        "--config", help="YAML or JSON file with the config fields (instead of a preset)"
    )
    p.add_argument(
        "--table-only", action="store_true", help="rewrite the table from what is done; run nothing"
    )
    p.add_argument(
        "--partial",
        action="store_true",
        help="with --table-only: count unfinished evaluations too, with the cases they scored so "
        "far, marked partial in the table (where a long run stands before its last case)",
    )
    p.add_argument(
        "--rejudge",
        metavar="FOLDER",
        help="score FOLDER's stored T1/T2/Prompt Robustness rows again with the current judge "
        "into --output-dir (a new folder; no model is called; training/ablation_rejudge.py)",
    )
    p.add_argument(
        "--rejudge-sets",
        metavar="DIR",
        help="with --rejudge: the world sets the ablation ran on (live_qa.jsonl, "
        "prompt_robustness.jsonl, catalogue.json), when the generator has changed since",
    )
    p.add_argument(
        "--step",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this step if not done (repeatable), e.g. eval:hsa_sft:variant_qa; two "
        "processes with OMP_NUM_THREADS=1 can run two independent steps on two cores",
    )
    add_flags(p, AblationConfig)
    p = sub.add_parser("eval", help="Score a checkpoint on held-out subsets (resumable)")
    p.add_argument("--out", required=True, help="folder for per-item JSONL and summary.json")
    p.add_argument("--config", help="YAML or JSON file with the config fields")
    add_flags(p, EvalConfig)  # the studio's evaluation form is the same dataclass
    p.add_argument(
        "--no-ifeval-base",
        dest="ifeval_base",
        action="store_const",
        const="false",
        help="the same as --ifeval-base false",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    from harness.checkpoints import CheckpointError
    from training.self_eval import SetsFailed

    args = build_parser().parse_args(argv)
    try:
        return _dispatch(args)
    except (ConfigError, FileNotFoundError, ValueError, CheckpointError, SetsFailed) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "sft":
        from training.sft_config import SFTStageConfig

        config = _build(SFTStageConfig, args)  # a bad config is named before torch is imported
        from training.sft_trainer import run_sft

        print(run_sft(config))
    elif args.command == "opd":
        from training.opd_config import OPDStageConfig

        config = _build(OPDStageConfig, args)
        from training.opd_trainer import run_opd

        print(run_opd(config))
    elif args.command == "rl":
        from training.rl_config import RLStageConfig

        config = _build(RLStageConfig, args)
        from training.rl_trainer import run_rl

        print(run_rl(config))
    elif args.command == "mtp":
        from training.mtp_config import MTPStageConfig

        config = _build(MTPStageConfig, args)
        from training.mtp_trainer import run_mtp

        print(run_mtp(config))
    elif args.command == "data":
        from training.sft_config import SFTStageConfig
        from training.stage_common import resolve_harness_dir
        from training.trajectory_data import build_sft_examples, write_examples

        config = _build(SFTStageConfig, args)
        examples, report = build_sft_examples(
            config=config, harness_dir=resolve_harness_dir(config.harness)
        )
        write_examples(examples, args.out)
        if config.pack_turns:
            from training.sft_trainer import measure_prefix_sharing

            report["prefix_sharing"] = sharing = measure_prefix_sharing(examples, config=config)
        print(json.dumps(report, indent=2))
        if config.pack_turns:
            print(
                f"shared-prefix batches of {sharing['batch_size']}: "
                f"{sharing['tokens_not_reencoded']:,} of {sharing['tokens']:,} packed tokens "
                f"not re-encoded ({sharing['tokens_saved_pct']}% tokens saved; "
                f"{sharing['batches_sharing']} of {sharing['batches']} batches share)"
            )
    elif args.command == "robustness-check":
        from training.robustness import RobustnessConfig, report_markdown, run_robustness

        try:
            results = run_robustness(_build(RobustnessConfig, args))
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(report_markdown(results))
    elif args.command == "pipeline":
        from training.pipeline import run_pipeline
        from training.pipeline_config import PipelineConfig

        print(run_pipeline(_build(PipelineConfig, args)))
    elif args.command == "ablation":
        from training.ablation import PRESETS, AblationConfig, run_ablation

        config = _build(AblationConfig, args, base=PRESETS[args.preset])
        if args.rejudge:
            from training.ablation_rejudge import RejudgeError, rejudge_ablation

            if not args.output_dir:
                print("--rejudge needs --output-dir: the new folder to write", file=sys.stderr)
                return 2
            try:
                rejudge_ablation(
                    source=args.rejudge, output_dir=args.output_dir, sets_dir=args.rejudge_sets
                )
            except RejudgeError as error:
                print(f"error: {error}", file=sys.stderr)
                return 2
            print((__import__("pathlib").Path(args.output_dir) / "table.md").read_text())
            return 0
        if args.partial and not args.table_only:
            print(
                "--partial goes with --table-only: it counts unfinished evaluations in the table",
                file=sys.stderr,
            )
            return 2
        table = run_ablation(
            config,
            only_table=args.table_only,
            only_steps=tuple(args.step),
            include_partial=args.partial,
        )
        print((__import__("pathlib").Path(config.output_dir) / "table.md").read_text())
        del table
    elif args.command == "eval":
        from harness.checkpoints import resolve_checkpoint
        from training.eval_config import EvalConfig
        from training.self_eval import evaluate_model
        from training.stage_common import resolve_harness_dir

        config = _build(EvalConfig, args)
        summary = evaluate_model(
            model_dir=resolve_checkpoint(config.model),
            out_dir=args.out,
            harness_dir=resolve_harness_dir(config.harness),
            sets=tuple(config.sets),
            n_cases=config.cases,
            n_prompt_robustness=max(1, config.cases // 2),
            n_ifeval=config.ifeval,
            ifeval_base=config.ifeval_base,
        )
        print(json.dumps({k: v for k, v in summary.items()}, indent=2, default=str))
    return 0


__all__ = ["build_parser", "main"]
