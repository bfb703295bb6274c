"""CLI: ``python -m harness augment`` writes one augmented Harness and says what changed.

``register(subparsers)`` is called by ``harness.cli``. The command loads the
bundle, applies the requested families with the seed, validates the result,
writes it to ``--out`` together with ``hsa-mapping.json`` (kept outside the
bundle files, in ``--mapping`` or beside the output directory), and prints the
summary: renames from the mapping, then the Harness diff summary.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from harness.jsonl import jsonl_records


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "augment",
        help="write a task-preserving variant of a Harness (HSA)",
        description="Harness-State Augmentation: rename and re-describe skills and tools, "
        "paraphrase, mask and reorder rules, reorder prompt blocks, move "
        "constraints and vary hooks, all inside the change envelope. The same "
        "seed gives byte-identical output.",
    )
    p.add_argument("--harness", required=True, metavar="DIR", help="the parent bundle directory")
    p.add_argument("--seed", required=True, type=int, metavar="N")
    p.add_argument(
        "--out",
        required=True,
        metavar="DIR2",
        help="where to write the variant (must not exist, or be empty, or use --force)",
    )
    p.add_argument(
        "--dims",
        default="skills,skill-content,tools,prompt,hooks",
        help="comma-separated families (default: all five)",
    )
    p.add_argument(
        "--envelope",
        metavar="FILE",
        help="change envelope YAML (default: harness/augment/envelope.yaml)",
    )
    p.add_argument(
        "--keep-skills",
        default="",
        metavar="A,B",
        help="skills that must not be masked (e.g. the gold skills of your cases)",
    )
    p.add_argument(
        "--cases",
        metavar="FILE.jsonl",
        help="evaluation cases (hs-case/1) whose gold labels the variant must keep "
        "valid: their skills are not masked, limits cover their replies",
    )
    p.add_argument(
        "--mapping",
        metavar="FILE",
        help="where to write the mapping JSON (default: DIR2.mapping.json)",
    )
    p.add_argument(
        "--llm",
        metavar="BASE_URL:MODEL|POLICY",
        help="paraphrase with an OpenAI-compatible endpoint, e.g. http://localhost:8000/v1:qwen, "
        "or a policy spec (local, torch:DIR); falls back to the offline engine",
    )
    p.add_argument("--force", action="store_true", help="replace an existing --out directory")
    p.add_argument("--quiet", action="store_true", help="print only the output paths")
    p.set_defaults(func=cmd_augment)


def cmd_augment(args: argparse.Namespace) -> int:
    from harness import load_dir
    from harness.augment import (
        EnvelopeError,
        Requirements,
        augment_bundle,
        load_envelope,
        parse_dims,
    )
    from harness.errors import HarnessValidationError

    out = Path(args.out)
    try:
        dims = parse_dims(args.dims)
        envelope = load_envelope(args.envelope) if args.envelope else None
        bundle = load_dir(args.harness)
    except (ValueError, EnvelopeError, HarnessValidationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    keep = frozenset(s.strip() for s in args.keep_skills.split(",") if s.strip())
    requirements = Requirements(skills=keep)
    if args.cases:
        try:
            requirements = requirements.merge(cases_requirements(args.cases))
        except ValueError as exc:
            print(f"error: --cases: {exc}", file=sys.stderr)
            return 2
        keep = requirements.skills
    unknown = sorted(keep - set(bundle.skills))
    if unknown:
        print(
            f"error: --keep-skills/--cases name {', '.join(unknown)}, which {args.harness} "
            f"does not have (skills: {', '.join(sorted(bundle.skills))})",
            file=sys.stderr,
        )
        return 2
    if out.exists() and any(out.iterdir()) and not args.force:
        print(
            f"error: {out} exists and is not empty; choose another --out or pass --force",
            file=sys.stderr,
        )
        return 2
    rewriter = None
    if args.llm:
        from harness.augment.llm import LLMRewriter

        try:
            rewriter = LLMRewriter.from_spec(args.llm)
        except ValueError as exc:
            print(f"error: --llm: {exc}", file=sys.stderr)
            return 2
    variant = augment_bundle(
        bundle=bundle,
        seed=args.seed,
        dims=dims,
        envelope=envelope,
        requirements=requirements,
        rewriter=rewriter,
    )
    if out.exists():
        shutil.rmtree(out)
    variant.bundle.dump_dir(out)
    mapping_path = Path(args.mapping) if args.mapping else out.with_name(out.name + ".mapping.json")
    mapping_path.parent.mkdir(parents=True, exist_ok=True)
    mapping_path.write_text(variant.mapping.to_json(), encoding="utf-8")
    if args.quiet:
        print(out)
        print(mapping_path)
        return 0
    print(f"# {bundle.summary()}")
    print(f"# -> {variant.bundle.summary()}  (seed {args.seed}, dims {','.join(dims)})")
    for line in describe_mapping(variant.mapping):
        print(line)
    for line in variant.summary():
        print(f"  {line}")
    print(f"wrote {out} and {mapping_path}")
    return 0


def cases_requirements(path: str):
    """The merged needs of every case in a JSONL case file (ValueError names the line)."""

    from harness.augment import Requirements, requirements_from_case

    merged = Requirements()
    for n, case in jsonl_records(path):
        if not isinstance(case, dict) or not isinstance(case.get("gold"), dict):
            raise ValueError(f"{path}:{n}: gold: a case needs a gold object (hs-case/1)")
        merged = merged.merge(requirements_from_case(case))
    return merged


def describe_mapping(mapping) -> list[str]:
    """Renames and masks in words (the diff summary shows them as add/remove)."""
    lines = []
    for kind, table in (("tool", mapping.tools), ("skill", mapping.skills)):
        for old, new in sorted(table.items()):
            lines.append(f"  {kind} renamed: {old} -> {new}")
    for name in mapping.masked_skills:
        lines.append(f"  skill masked: {name}")
    for item in mapping.added_skills:
        lines.append(f"  skill added ({item['origin']}): {item['name']} ({item['kind']})")
    for skill, ids in sorted(mapping.masked_rules.items()):
        lines.append(f"  rules masked in {skill}: {', '.join(ids)}")
    return lines
