"""Runs one library command (``python -m training sft --config FILE``) as a child process of the
worker.

The child is the command the run page shows, argv for argv, so a run started from the browser and
one started in a terminal are the same run. A child process, not a call in the worker's process,
because a training run must be stoppable at any moment (a cancel ends it at once and it resumes
from its last checkpoint), must free its memory when it ends, and may itself be ``accelerate
launch`` on a multi-GPU host. Its output goes to the job's log; ``on_tick`` runs about once a second
(progress from the run folder); the job's cancel check runs with every report. If the worker dies
the kernel ends the child too (``PR_SET_PDEATHSIG``), so no orphan keeps training.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# progress bars (tqdm) redraw with carriage returns: they are noise in a job log
_NOISE = ("it/s]", "s/it]", "Writing model shards", "Loading weights")


# The child's environment is allow-listed, as an MCP server's is: a training command needs the
# paths, locale, thread counts, accelerator and model-cache settings, never the worker's secrets
# (SECRET_KEY, DATABASE_URL, REDIS_URL, ENDPOINT_SECRETS_KEY, OPENAI_API_KEY: an ``openai:`` SFT
# teacher on someone's own server would otherwise receive the worker's key).
CHILD_ENV_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "TERM",
        "VIRTUAL_ENV",
        "PYTHONHASHSEED",
        "PYTHONWARNINGS",
        "PYTHONDONTWRITEBYTECODE",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "TOKENIZERS_PARALLELISM",
        "CUDA_VISIBLE_DEVICES",
        "CUDA_HOME",
        "LD_LIBRARY_PATH",
    }
)
CHILD_ENV_PREFIXES = (
    "LC_",
    "XDG_",
    "HF_",
    "TRANSFORMERS_",
    "TORCH",
    "PYTORCH_",
    "CUDA_",
    "NCCL_",
    "ACCELERATE_",
    "HARNESS_",
    "NLTK_",
)
_NEVER = ("KEY", "TOKEN", "SECRET", "PASSWORD")


def child_env() -> dict[str, str]:
    """The worker's variables a training command may see (no name holding
    KEY/TOKEN/SECRET/PASSWORD)."""
    allowed = {
        name: value
        for name, value in os.environ.items()
        if (name in CHILD_ENV_NAMES or name.startswith(CHILD_ENV_PREFIXES))
        and not any(word in name.upper() for word in _NEVER)
    }
    return {**allowed, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "TQDM_DISABLE": "1"}


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(process: subprocess.Popen, *, grace_s: float = 10.0) -> None:
    """SIGTERM to the child's process group, SIGKILL after ``grace_s``."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def command_argv(argv: list[str], *, launcher: str = "") -> list[str]:
    """What the worker executes for ``python -m <argv>``: this interpreter, or the host's launcher
    (``accelerate launch --num_processes 4`` -> ``accelerate launch --num_processes 4 -m
    <argv>``)."""
    if launcher:
        return [*shlex.split(launcher), "-m", *argv]
    return [sys.executable, "-m", *argv]


def run_command(
    argv: list[str],
    *,
    log: Callable[[str], None],
    on_tick: Callable[[], None],
    tick_s: float = 1.0,
    launcher: str = "",
) -> tuple[int, list[str]]:
    """Run ``python -m <argv>`` (through ``launcher`` if given) to its end; (exit code, last lines
    of its output).

    ``log`` and ``on_tick`` may raise (the job was cancelled): the child is stopped and the error
    goes on.
    """
    env = child_env()
    process = subprocess.Popen(
        command_argv(argv, launcher=launcher),
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    lines: list[str] = []
    tail: list[str] = []
    lock = threading.Lock()

    def read() -> None:
        for line in process.stdout:
            line = line.rstrip("\n").rsplit("\r", 1)[-1].rstrip()
            if line and not any(mark in line for mark in _NOISE):
                with lock:
                    lines.append(line[:2000])

    reader = threading.Thread(target=read, name=f"run-{process.pid}-output", daemon=True)
    reader.start()
    try:
        while True:
            ended = process.poll() is not None
            if ended:
                reader.join(timeout=5)
            with lock:
                batch, lines[:] = list(lines), []
            if batch:
                tail = (tail + batch)[-40:]
                log("\n".join(batch))
            on_tick()
            if ended:
                return process.returncode, tail
            time.sleep(tick_s)
    except BaseException:
        _stop(process)
        raise
    finally:
        if process.poll() is None:
            _stop(process)
