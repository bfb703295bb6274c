"""CLI: ``python -m harness run`` and ``python -m harness serve-mcp``.

``register(subparsers)`` is called by ``harness.cli`` to add both subcommands;
``add_run_parser`` / ``add_serve_mcp_parser`` add one each.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from harness.mcp_registry import McpRegistry, add_trust_flag
from harness.numbers import decimal_int


def add_run_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from harness.policies import SPEC_HELP

    p = sub.add_parser(
        "run",
        help="answer one request under a Harness and show the trajectory",
        description="Answer one live-room request (JSON, see docs/runtime.md) under "
        "a Harness with a policy; prints the reply and a step-by-step "
        "trajectory, or the JSON record with --json.",
    )
    p.add_argument(
        "--harness",
        default=None,
        metavar="DIR",
        help="Harness bundle directory (default: the demo livestream-avatar)",
    )
    p.add_argument("--request", required=True, metavar="FILE.json", help="the request JSON")
    p.add_argument("--policy", default="local", help=f"{SPEC_HELP} (default: local)")
    p.add_argument(
        "--catalogue", metavar="FILE.json", help="catalogue snapshot (default: the demo catalogue)"
    )
    p.add_argument("--json", action="store_true", help="print the trajectory record as JSON")
    p.add_argument("--out", metavar="FILE.json", help="also write the trajectory JSON here")
    p.add_argument(
        "--post",
        metavar="URL",
        help="also post the trajectory to a studio deployment, e.g. "
        "http://studio:8000/api/v1/deployments/shop-eu/trajectories/ "
        "(token: $HARNESS_TRAFFIC_TOKEN)",
    )
    p.add_argument(
        "--inject-failures",
        metavar="SPEC",
        default="",
        help="e.g. timeout=0.2,malformed=0.1,permission_denied=0.1,seed=7",
    )
    p.add_argument(
        "--demo-trajectory",
        action="append",
        default=[],
        metavar="FILE.json",
        help="a recorded trajectory shown to the model as an in-context example "
        "(repeatable; helps small local models follow the tool protocol)",
    )
    p.add_argument(
        "--max-rounds", type=_number(int, low=1), help="override the Harness constraint max_rounds"
    )
    p.add_argument(
        "--budget-s",
        type=_number(float, low=0, open_low=True),
        help="override the Harness constraint trajectory_budget_s (slow CPUs)",
    )
    p.add_argument(
        "--temperature",
        type=_number(float, low=0),
        default=0.0,
        help="sampling temperature (0: greedy)",
    )
    p.add_argument("--top-p", type=_number(float, low=0, high=1, open_low=True), default=1.0)
    p.add_argument("--max-new-tokens", type=_number(int, low=1), default=256)
    p.add_argument("--seed", type=int, default=None)
    add_trust_flag(p)
    p.set_defaults(func=cmd_run)
    return p


def _number(kind: type, *, low: float, high: float | None = None, open_low: bool = False):
    """An argparse type: a finite ``kind`` (int or float) in the range, or a message saying
    which."""
    wanted = (
        (f"> {low}" if open_low else f">= {low}")
        if high is None
        else f"in {'(' if open_low else '['}{low}, {high}]"
    )
    noun = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if (
            value is None
            or not math.isfinite(value)
            or value < low
            or (open_low and value == low)
            or (high is not None and value > high)
        ):
            raise argparse.ArgumentTypeError(f"{text!r}: expected {noun} {wanted}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    return parse


def _port(text: str) -> int:
    port = decimal_int(text, max_digits=5)
    if port is None or not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected a port number from 1 to 65535")
    return port


def add_serve_mcp_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "serve-mcp", help="run the marketing MCP server (stdio, or HTTP with --http)"
    )
    p.add_argument(
        "--http",
        type=_port,
        metavar="PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument(
        "--catalogue",
        metavar="FILE.json",
        help="catalogue snapshot (default: $HARNESS_CATALOGUE, else the demo catalogue)",
    )
    p.set_defaults(func=cmd_serve_mcp)
    return p


def register(sub: argparse._SubParsersAction) -> None:
    add_run_parser(sub)
    add_serve_mcp_parser(sub)


def cmd_run(args: argparse.Namespace) -> int:
    from harness import demo_harness_dir, load_dir
    from harness.checkpoints import CheckpointError
    from harness.errors import HarnessValidationError
    from harness.livestream import Catalogue, DocumentValidationError, Request, demo_catalogue
    from harness.policies import GenerationSettings, make_policy
    from harness.runtime import Agent, FailureInjection
    from harness.runtime.render import render_trajectory

    # Every input is read and validated here, before a model is loaded or an MCP server
    # started; each failure is one message naming the file (and line or field), exit 2.
    try:
        request = Request.load(args.request)
        catalogue = Catalogue.load(args.catalogue) if args.catalogue else demo_catalogue()
        try:
            request = Request.from_dict(
                request.to_dict(),
                catalogue=request.catalogue or catalogue,
                source=str(args.request),
            )
        except DocumentValidationError as exc:
            against = (
                "its own catalogue"
                if request.catalogue
                else args.catalogue or "the demo catalogue (give --catalogue FILE for another)"
            )
            raise ValueError(f"{exc}\n  (link ids were checked against {against})") from None
        demonstrations = [_read_demonstration(f) for f in args.demo_trajectory]
        if args.out:
            _check_writable(args.out)
        poster = _poster(args) if args.post else None
        injection = FailureInjection.parse(args.inject_failures)
        settings = GenerationSettings(
            temperature=args.temperature,
            top_p=args.top_p,
            max_new_tokens=args.max_new_tokens,
            seed=args.seed,
        )
        bundle = load_dir(args.harness or demo_harness_dir())
        policy = make_policy(args.policy, settings=settings)
    except (
        HarnessValidationError,
        DocumentValidationError,
        ValueError,
        OSError,
        CheckpointError,
    ) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    try:
        registry = McpRegistry.default()
        agent = Agent(
            bundle=bundle,
            policy=policy,
            catalogue=catalogue,
            failure_injection=injection,
            generation=settings,
            demonstrations=demonstrations,
            max_rounds=args.max_rounds,
            trajectory_budget_s=args.budget_s,
            mcp_registry=registry,
            trust_harness_commands=args.trust_harness_commands,
        )
    except HarnessValidationError as exc:  # also McpServerRefused, McpRegistryError
        print(str(exc), file=sys.stderr)
        return 2
    with agent:
        if not args.json:
            for server, status in agent.mcp_status().items():
                state = (
                    f"unavailable: {status['error']}"
                    if "error" in status
                    else "tools " + ", ".join(status["tools"])
                )
                if status.get("missing"):
                    state += "; declared but not offered: " + ", ".join(status["missing"])
                print(f"mcp      {server}: {state}")
        traj = agent.run(request)
    record = traj.to_dict()
    if args.out:
        Path(args.out).write_text(
            json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        print(render_trajectory(traj))
    if poster is not None:
        from harness.runtime.traffic import TrafficPostError

        poster.add(record)
        try:
            result = poster.flush()
        except TrafficPostError as exc:
            print(str(exc), file=sys.stderr)
            return 1
        said = "stored" if result["stored"] else "already stored (same request id)"
        print(f"posted {record['request_id']} to {args.post}: {said}", file=sys.stderr)
    return 0


def _poster(args: argparse.Namespace):
    """The poster ``--post`` asks for, checked before the run: URL, token, the model's name and
    fingerprint."""
    from harness.policies.factory import policy_model
    from harness.runtime.traffic import TrafficPoster, TrafficPostError, traffic_token

    try:
        return TrafficPoster(url=args.post, token=traffic_token(), model=policy_model(args.policy))
    except TrafficPostError as exc:
        raise ValueError(str(exc)) from None


def _read_demonstration(path: str) -> dict:
    """A ``--demo-trajectory`` file, checked for what the agent shows of it."""
    from harness.userfiles import InputFileError, read_json

    data = read_json(path, what="demonstration trajectory")
    calls = data.get("model_calls") if isinstance(data, dict) else None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise InputFileError(
            f"{path}: model_calls: a demonstration trajectory is a trajectory "
            "record (as --out writes) with a list of model_calls"
        )
    for i, call in enumerate(calls):
        messages = call.get("messages")
        if call.get("error") is None and not (
            isinstance(call.get("text"), str)
            and isinstance(messages, list)
            and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages)
        ):
            raise InputFileError(
                f"{path}: model_calls[{i}]: needs text (a string) and messages "
                "(a list of {role, content} chat messages)"
            )
    return data


def _check_writable(out: str) -> None:
    """``--out`` must be a file path in an existing folder (checked before the run, not after)."""
    path = Path(out)
    if path.is_dir():
        raise ValueError(
            f"--out {out}: is a directory; give a file path such as {path / 'trajectory.json'}"
        )
    if not path.parent.is_dir():
        raise ValueError(f"--out {out}: the folder {path.parent} does not exist")


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    from harness.livestream import DocumentValidationError
    from harness.mcp_server import serve
    from harness.mcp_server.server import load_server_catalogue

    try:  # the catalogue (--catalogue or $HARNESS_CATALOGUE) is checked before serving
        load_server_catalogue(args.catalogue)
    except (DocumentValidationError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    serve(catalogue_path=args.catalogue, http_port=args.http, host=args.host)
    return 0
