"""``python -m serving engine-server``: its flags, and the uvicorn server that runs the app until
SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import signal
from collections.abc import Callable
from typing import Any

from serving.engine_server.app import build_app
from serving.engine_server.backends import QUANTIZATIONS, TORCH_QUANTIZATIONS
from serving.engine_server.parsing import READ_TIMEOUT_S
from serving.engine_server.protocol import (
    HEADER_TIMEOUT_S,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_CLIENT,
    guarded_protocol,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m serving engine-server",
        description="Serve a checkpoint on the CPU route (OpenAI-compatible).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


def _positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a {kind.__name__}; give a number above 0"
            ) from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r}: give a number above 0")
        return value

    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="checkpoint folder, or 'default' / 'tiny'")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default="gguf",
        help="gguf (llama.cpp: the shipped Q4_1 file for the default model, a Q8_0 export "
        "otherwise) or a GGUF format to export to; none (fp32) or int8: the torch engine",
    )
    parser.add_argument(
        "--draft-head",
        help="decode speculatively with this draft head (python -m training mtp; the torch engine)",
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="CPU threads (default: the engine's choice)"
    )
    parser.add_argument(
        "--max-tokens-cap", type=int, default=2048, help="largest max_tokens a request may ask for"
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help="connections and requests at once; more get a 503",
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=READ_TIMEOUT_S,
        help="seconds a request body may take to arrive (then 408)",
    )
    parser.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=HEADER_TIMEOUT_S,
        help="seconds a request's headers may take to arrive (then 408 and the connection closes)",
    )
    parser.add_argument(
        "--max-connections-per-client",
        type=_positive(int),
        default=MAX_CONNECTIONS_PER_CLIENT,
        help="connections one client address may hold at once; more get a 503",
    )


def run(args: argparse.Namespace) -> int:
    import uvicorn

    from harness.checkpoints import resolve_checkpoint
    from serving.llama_cpp import close_all, stop_all_calls

    class StoppingServer(uvicorn.Server):
        """On SIGTERM or Ctrl-C uvicorn waits for its open responses; the running llama.cpp calls
        are stopped first, so those end at llama.cpp's next prefill batch or token rather than at
        ``max_tokens``."""

        def handle_exit(self, sig, frame) -> None:
            stop_all_calls()  # sets events only: safe in a signal handler
            super().handle_exit(sig, frame)

    if args.threads and (args.quantization in TORCH_QUANTIZATIONS or args.draft_head):
        # the torch engine's threads; llama.cpp takes them as a parameter (2 s of start-up saved)
        import torch

        torch.set_num_threads(args.threads)
    app = build_app(
        resolve_checkpoint(args.checkpoint),
        quantization=args.quantization,
        max_tokens_cap=args.max_tokens_cap,
        draft_head=args.draft_head,
        threads=args.threads,
        read_timeout_s=args.read_timeout,
    )
    http = guarded_protocol(
        header_timeout_s=args.header_timeout, per_client=args.max_connections_per_client
    )
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level="info",
        http=http,
        limit_concurrency=args.max_connections,
        timeout_keep_alive=5,
    )
    for sig in (
        signal.SIGTERM,
        signal.SIGINT,
    ):  # uvicorn hands the signal it stopped for back to this
        signal.signal(
            sig, lambda *_: None
        )  # handler when it is done: the server then exits 0 below
    StoppingServer(config).run()
    close_all()  # join the llama.cpp threads of the stopped calls before the interpreter exits
    return 0
