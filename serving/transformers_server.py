"""`transformers serve` as a managed process: the CPU serving engine.

Starts `python -m transformers.cli.transformers serve CHECKPOINT` (transformers[serving]
5.x) on a free localhost port with the checkpoint preloaded, writes its output to a
log file, waits until `/health` answers and `/v1/models` lists the checkpoint as
loaded, and stops it cleanly (SIGTERM to its process group, SIGKILL after a grace
period). Nothing is downloaded: the hub is switched off in the child's environment.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from harness.checkpoints import checkpoint_problem


class ServerStartError(RuntimeError):
    """The managed server did not become healthy; the message carries its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def die_with_parent() -> None:
    """preexec_fn: the child gets SIGTERM if the process that started it dies (Linux),
    so a killed replay never leaves a server running."""
    with contextlib.suppress(Exception):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    return "\n".join(text.splitlines()[-lines:])


class TransformersServer:
    """One `transformers serve` process serving one checkpoint on localhost.

    Use as a context manager, or call start() / stop(). `base_url` is the
    OpenAI-compatible root (`http://HOST:PORT/v1`) and `model` the name clients
    must send (the server is pinned to the checkpoint path).
    """

    def __init__(
        self,
        *,
        checkpoint: str | Path,
        log_path: str | Path,
        host: str = "127.0.0.1",
        port: int | None = None,
        continuous_batching: bool = False,
        dtype: str = "auto",
        startup_timeout_s: float = 300.0,
        extra_args: tuple[str, ...] = (),
        threads: int | None = None,
    ):
        problem = checkpoint_problem(checkpoint)
        if problem:
            raise ServerStartError(
                f"checkpoint: {problem}; give a saved transformers checkpoint folder"
            )
        self.checkpoint = str(Path(checkpoint).resolve())
        self.log_path = Path(log_path)
        self.host = host
        self.port = port
        self.continuous_batching = continuous_batching
        self.dtype = dtype
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = tuple(extra_args)
        self.threads = threads
        self._proc: subprocess.Popen | None = None
        self._log_file = None

    @property
    def model(self) -> str:
        return self.checkpoint

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        """The exact argv the server is started with."""
        port = self.port if self.port is not None else 0
        argv = [
            sys.executable,
            "-m",
            "transformers.cli.transformers",
            "serve",
            self.checkpoint,
            "--host",
            self.host,
            "--port",
            str(port),
            "--device",
            "cpu",
            "--dtype",
            self.dtype,
            "--log-level",
            "info",
            "--continuous-batching" if self.continuous_batching else "--no-continuous-batching",
        ]
        return argv + list(self.extra_args)

    def start(self) -> TransformersServer:
        if self._proc is not None:
            raise RuntimeError("server already started")
        if self.port is None:
            self.port = free_port(self.host)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            HF_HUB_DISABLE_UPDATE_CHECK="1",
            HF_HUB_DISABLE_TELEMETRY="1",
            PYTHONUNBUFFERED="1",
        )
        if self.threads is not None:
            env.update(OMP_NUM_THREADS=str(self.threads), MKL_NUM_THREADS=str(self.threads))
        self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self._log_file.write(f"$ {' '.join(self.command())}\n".encode())
        self._log_file.flush()
        self._proc = subprocess.Popen(
            self.command(),
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # its own process group, so stop() reaches its children
            preexec_fn=die_with_parent,
        )
        try:
            self.wait_healthy()
        except BaseException:
            self.stop()
            raise
        return self

    def wait_healthy(self) -> None:
        """Block until /health is ok and the checkpoint is loaded, or raise ServerStartError."""
        deadline = time.monotonic() + self.startup_timeout_s
        last_error = "no answer yet"
        with httpx.Client(timeout=5.0) as client:
            while time.monotonic() < deadline:
                if self._proc is None or self._proc.poll() is not None:
                    code = None if self._proc is None else self._proc.returncode
                    raise ServerStartError(
                        f"{self.label} exited with code {code} before it was healthy; "
                        f"log {self.log_path}:\n{_log_tail(self.log_path)}"
                    )
                try:
                    if client.get(
                        f"{self.root_url}/health"
                    ).status_code == 200 and self._model_loaded(client):
                        return
                    last_error = "model not listed as loaded yet"
                except httpx.HTTPError as exc:
                    last_error = f"{type(exc).__name__}: {exc}"
                time.sleep(0.25)
        raise ServerStartError(
            f"{self.label} on {self.root_url} was not healthy after {self.startup_timeout_s:.0f} s "
            f"({last_error}); log {self.log_path}:\n{_log_tail(self.log_path)}"
        )

    label = "transformers serve"

    def _model_loaded(self, client: httpx.Client) -> bool:
        models = client.get(f"{self.base_url}/models").json().get("data", [])
        return any(m.get("id") == self.model for m in models)

    def healthy(self) -> bool:
        """Whether the process runs and answers /health right now."""
        if self._proc is None or self._proc.poll() is not None:
            return False
        try:
            return httpx.get(f"{self.root_url}/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, *, grace_s: float = 10.0) -> int | None:
        """Stop the server (SIGTERM, then SIGKILL after grace_s); returns its exit code."""
        proc, self._proc = self._proc, None
        code = None
        if proc is not None:
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
                try:
                    proc.wait(timeout=grace_s)
                except subprocess.TimeoutExpired:
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait(timeout=grace_s)
            code = proc.returncode
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return code

    def __enter__(self) -> TransformersServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone
        os.killpg(proc.pid, sig)


class EngineServer(TransformersServer):
    """The local engine's OpenAI-compatible server (``python -m serving engine-server``) as a
    managed process."""

    label = "engine-server"

    def __init__(
        self, *, quantization: str = "none", draft_head: str | None = None, **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.quantization = quantization
        self.draft_head = draft_head

    def command(self) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "serving",
            "engine-server",
            self.checkpoint,
            "--host",
            self.host,
            "--port",
            str(self.port if self.port is not None else 0),
            "--quantization",
            self.quantization,
        ]
        if self.threads is not None:
            argv += ["--threads", str(self.threads)]
        if self.draft_head:
            argv += ["--draft-head", self.draft_head]
        return argv + list(self.extra_args)
