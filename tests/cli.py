"""The project's command lines as the tests run them: in a subprocess, or in this process.

``run("harness", "validate", DIR)`` is exactly what a user types (``python -m harness validate
DIR``): a fresh interpreter, the exit code, stdout and stderr, and whatever a crash prints. Each CLI
keeps a few such tests, for the exit codes and to show that no traceback reaches the user.

``call("harness", "validate", DIR)`` runs the same ``main(argv)`` that ``python -m harness`` runs,
in this process, and gives the same ``CompletedProcess``: no interpreter start and no torch import
per call, so the many tests of messages and exit codes stay fast. An exception that the real command
would print as a traceback fails the test with that exception.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: where each ``python -m MODULE`` finds its ``main(argv) -> int``
MAINS = {
    "harness": "harness.cli",
    "evaluation": "evaluation.__main__",
    "training": "training.cli",
    "serving": "serving.__main__",
}


def run(
    module: str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path = ROOT,
) -> subprocess.CompletedProcess:
    """``python -m MODULE ARGS...`` in a fresh interpreter (stdin closed, the project on
    PYTHONPATH)."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


def call(module: str, *args: str) -> subprocess.CompletedProcess:
    """``MODULE``'s ``main(ARGS)`` in this process, captured as ``run`` captures a subprocess."""
    main = importlib.import_module(MAINS[module]).main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse's usage errors exit 2
            code = exit_.code
            if not (code is None or isinstance(code, int)):  # sys.exit("message"): printed, exit 1
                print(code, file=sys.stderr)
                code = 1
    return subprocess.CompletedProcess(
        [sys.executable, "-m", module, *args], code or 0, out.getvalue(), err.getvalue()
    )
