"""``python -m harness``: validate and diff bundles (and, from the runtime and
augmentation packages and the skill importer, run requests, serve the MCP
server, augment and import Agent Skills folders).

Subcommands of other packages register themselves through a ``register(sub)``
function in a module listed in ``_PLUGINS``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from harness.bundle import load_mapping, read_dir, validate_mapping
from harness.diff import diff_bundles, diff_files
from harness.errors import HarnessValidationError, Problem

_PLUGINS = ("harness.runtime.cli", "harness.augment.cli", "harness.skill_import")


def _located(bundle_dir: str, p: Problem) -> str:
    """A problem with the bundle directory in front of its file."""
    where = bundle_dir if p.file in ("(bundle)", str(bundle_dir)) else Path(bundle_dir) / p.file
    return f"{where}:{p.line}: {p.field}: {p.message}"


def cmd_validate(args) -> int:
    status = 0
    for path in args.dirs:
        files, problems = read_dir(path)
        problems = problems or validate_mapping(files)
        if problems:
            status = 1
            for p in problems:
                print(_located(path, p) if args.full_paths else str(p))
            print(f"{path}: {len(problems)} problem(s)", file=sys.stderr)
        else:
            from harness.prompt_sharing import prompt_sharing

            bundle = load_mapping(files, source=str(path))
            print(bundle.summary())
            print(prompt_sharing(bundle).summary())
    return status


def cmd_diff(args) -> int:
    a_files, pa = read_dir(args.dir_a)
    b_files, pb = read_dir(args.dir_b)
    if pa or pb:  # named with their directory: either bundle may be the unreadable one
        for p in [_located(args.dir_a, p) for p in pa] + [_located(args.dir_b, p) for p in pb]:
            print(p, file=sys.stderr)
        return 2
    try:
        result = diff_bundles(load_mapping(a_files), load_mapping(b_files), context=args.context)
    except HarnessValidationError as exc:
        # Invalid bundles can still be compared as text; the summary needs both valid.
        print(f"note: {exc.args[0].splitlines()[0]}; showing the text diff only", file=sys.stderr)
        result = diff_files(a_files, b_files, context=args.context)
    if args.summary or not result.files:
        for line in result.summary:
            print(f"# {line}")
    sys.stdout.write(result.text())
    return 1 if result.changed and args.exit_code else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m harness", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="check one or more bundle directories")
    p.add_argument("dirs", nargs="+", metavar="DIR")
    p.add_argument(
        "--full-paths",
        action="store_true",
        help="print problems with the bundle directory in front of each file",
    )
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("diff", help="unified diff per changed file between two bundles")
    p.add_argument("dir_a", metavar="DIR_A")
    p.add_argument("dir_b", metavar="DIR_B")
    p.add_argument("--summary", action="store_true", help="print the change summary first")
    p.add_argument("--context", type=int, default=3, help="lines of context (default 3)")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when the bundles differ")
    p.set_defaults(func=cmd_diff)
    for module in _PLUGINS:
        try:
            plugin = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue  # that package is not part of this checkout yet
            raise
        plugin.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
