"""CLI: ``python -m harness run`` and ``python -m harness serve-mcp``.

``register(subparsers)`` is called by ``harness.cli`` to add both subcommands;
``add_run_parser`` / ``add_serve_mcp_parser`` add one each.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_run_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from harness.policies import SPEC_HELP

    p = sub.add_parser("run", help="answer one request under a Harness and show the trajectory",
                       description="Answer one live-room request (JSON, see docs/runtime.md) under "
                                   "a Harness with a policy; prints the reply and a step-by-step "
                                   "trajectory, or the JSON record with --json.")
    p.add_argument("--harness", default=None, metavar="DIR",
                   help="Harness bundle directory (default: the demo livestream-avatar)")
    p.add_argument("--request", required=True, metavar="FILE.json", help="the request JSON")
    p.add_argument("--policy", default="local", help=f"{SPEC_HELP} (default: local)")
    p.add_argument("--catalogue", metavar="FILE.json",
                   help="catalogue snapshot (default: the demo catalogue)")
    p.add_argument("--json", action="store_true", help="print the trajectory record as JSON")
    p.add_argument("--out", metavar="FILE.json", help="also write the trajectory JSON here")
    p.add_argument("--inject-failures", metavar="SPEC", default="",
                   help="e.g. timeout=0.2,malformed=0.1,permission_denied=0.1,seed=7")
    p.add_argument("--demo-trajectory", action="append", default=[], metavar="FILE.json",
                   help="a recorded trajectory shown to the model as an in-context example "
                        "(repeatable; helps small local models follow the tool protocol)")
    p.add_argument("--max-rounds", type=int, help="override the Harness constraint max_rounds")
    p.add_argument("--budget-s", type=float,
                   help="override the Harness constraint trajectory_budget_s (slow CPUs)")
    p.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (0: greedy)")
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(func=cmd_run)
    return p


def add_serve_mcp_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("serve-mcp", help="run the marketing MCP server (stdio, or HTTP with --http)")
    p.add_argument("--http", type=int, metavar="PORT",
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--catalogue", metavar="FILE.json",
                   help="catalogue snapshot (default: $HARNESS_CATALOGUE, else the demo catalogue)")
    p.set_defaults(func=cmd_serve_mcp)
    return p


def register(sub: argparse._SubParsersAction) -> None:
    add_run_parser(sub)
    add_serve_mcp_parser(sub)


def cmd_run(args: argparse.Namespace) -> int:
    from harness import demo_harness_dir, load_dir
    from harness.errors import HarnessValidationError
    from harness.livestream import Catalogue, DocumentValidationError, Request
    from harness.policies import GenerationSettings, make_policy
    from harness.runtime import Agent, FailureInjection
    from harness.runtime.render import render_trajectory

    try:
        bundle = load_dir(args.harness or demo_harness_dir())
        catalogue = Catalogue.load(args.catalogue) if args.catalogue else None
        request_path = Path(args.request)
        if not request_path.is_file():
            print(f"{request_path}: no such request file", file=sys.stderr)
            return 2
        injection = FailureInjection.parse(args.inject_failures)
        settings = GenerationSettings(temperature=args.temperature, top_p=args.top_p,
                                      max_new_tokens=args.max_new_tokens, seed=args.seed)
        policy = make_policy(args.policy, settings=settings)
        demonstrations = [json.loads(Path(f).read_text(encoding="utf-8")) for f in args.demo_trajectory]
    except (HarnessValidationError, DocumentValidationError, ValueError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    with Agent(bundle=bundle, policy=policy, catalogue=catalogue, failure_injection=injection,
               generation=settings, demonstrations=demonstrations, max_rounds=args.max_rounds,
               trajectory_budget_s=args.budget_s) as agent:
        try:
            request = Request.load(request_path)
            request = Request.from_dict(request.to_dict(), source=str(request_path),
                                        catalogue=request.catalogue or agent.catalogue)
        except DocumentValidationError as exc:
            print(str(exc), file=sys.stderr)
            return 2
        if not args.json:
            for server, status in agent.mcp_status().items():
                state = (f"unavailable: {status['error']}" if "error" in status
                         else "tools " + ", ".join(status["tools"]))
                if status.get("missing"):
                    state += "; declared but not offered: " + ", ".join(status["missing"])
                print(f"mcp      {server}: {state}")
        traj = agent.run(request)
    record = traj.to_dict()
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n",
                                  encoding="utf-8")
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        print(render_trajectory(traj))
    return 0


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    from harness.mcp_server import serve

    serve(catalogue_path=args.catalogue, http_port=args.http, host=args.host)
    return 0
