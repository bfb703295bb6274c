"""Issue 28 item 8: the CLI's one bounded reader (harness/userfiles.py) refuses what made it crash
or hang.

``python -m harness run`` as a subprocess: a request holding a lone surrogate (``"\\ud800"``) passed
validation and ended in a traceback when the reply was printed; a FIFO given as ``--request``
blocked forever. Both are now one line naming the file, exit 2, before any model or server starts.
(The deeply nested ``sglang-command --release`` file is in test_release_integrity.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "requests" / "scripts" / "product_price.json"


def _run(request: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "harness",
            "run",
            "--request",
            str(request),
            "--policy",
            f"scripted:{SCRIPT}",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_lone_surrogate_in_a_request_is_named_not_a_traceback(tmp_path):
    request = json.loads((ROOT / "examples" / "requests" / "product_price.json").read_text())
    text = json.dumps(request).replace("How much is product #3?", "How much is \\ud800 product #3?")
    path = tmp_path / "surrogate.json"
    path.write_text(text)
    done = _run(path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert (
        str(path) in done.stderr
        and "comments[0].text" in done.stderr
        and "surrogate" in done.stderr
    )


def test_a_fifo_given_as_the_request_is_refused_at_once(tmp_path):
    fifo = tmp_path / "request.json"
    os.mkfifo(fifo)
    done = _run(fifo, timeout=60)  # before the fix this blocked until the timeout
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert str(fifo) in done.stderr and "not a regular file" in done.stderr
