"""harness/checkpoints.py: one way to resolve a model name, check a folder and fingerprint every
file.

The name ``local`` means the same model to every command (issue 30 item 1: ``engine-server local``
failed while ``harness run --policy local`` worked); a fingerprint changes with any byte of any
file and the differences name the file; a folder holding a FIFO or a link to a folder is refused
without blocking.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.checkpoints import (
    CheckpointError,
    checkpoint_config,
    checkpoint_problem,
    files_differences,
    fingerprint,
    folder_files,
    is_checkpoint,
    resolve_checkpoint,
)
from harness.model_cache import default_model_dir, tiny_model_dir

ROOT = Path(__file__).resolve().parents[2]


def test_names_resolve_to_the_model_cache_and_a_bad_folder_says_what_is_valid(tmp_path):
    assert resolve_checkpoint("local") == resolve_checkpoint("default") == default_model_dir()
    assert resolve_checkpoint("tiny") == tiny_model_dir()
    assert resolve_checkpoint(str(tiny_model_dir())) == tiny_model_dir().resolve()
    with pytest.raises(
        CheckpointError,
        match=r"'/no/such' is not a model \(/no/such does not exist\): expected "
        r"'local', 'tiny', a checkpoint folder with config.json and weights, "
        r"or a LoRA adapter folder \(harness.adapters\)",
    ):
        resolve_checkpoint("/no/such")
    (tmp_path / "config.json").write_text("{}")
    assert checkpoint_problem(tmp_path).endswith(
        "has config.json but no weights (model.safetensors, "
        "model.safetensors.index.json, pytorch_model.bin, "
        "pytorch_model.bin.index.json)"
    )


def test_a_folder_with_config_json_and_no_weights_is_no_checkpoint_and_its_config_is_not_read(
    tmp_path,
):
    """is_checkpoint and checkpoint_config are the one test of a model folder (the studio's
    registry, run pages and endpoints, the GGUF export, sglang-command): config.json alone is not
    enough."""
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    assert (
        not is_checkpoint(tmp_path)
        and not is_checkpoint(None)
        and not is_checkpoint(tmp_path / "none")
    )
    with pytest.raises(CheckpointError, match="has config.json but no weights"):
        checkpoint_config(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    assert is_checkpoint(tmp_path) and checkpoint_config(tmp_path) == {"model_type": "llama"}
    (tmp_path / "config.json").write_text("[1]")
    with pytest.raises(CheckpointError, match="config.json: not a JSON object"):
        checkpoint_config(tmp_path)
    assert checkpoint_config(tiny_model_dir())["num_hidden_layers"] == 2


def test_the_fingerprint_covers_every_byte_and_the_differences_name_the_file(tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir(), folder)
    before = folder_files(folder)
    assert [f.name for f in before] == sorted(f.name for f in before)
    first = fingerprint(folder)
    weights = folder / "model.safetensors"
    with weights.open(
        "r+b"
    ) as handle:  # one byte in the middle, where no sample of the old fingerprint looked
        handle.seek(weights.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 1]))
    (folder / "sub").mkdir()
    (folder / "sub" / "extra.py").write_text("print('hi')\n")
    assert fingerprint(folder) != first
    changes = files_differences([f.to_dict() for f in before], folder_files(folder))
    assert changes[0].startswith("model.safetensors: content changed (sha256 ")
    assert changes[1] == "sub/extra.py: added (12 bytes)"


def test_a_fifo_or_a_link_to_a_folder_is_refused_without_blocking(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    os.mkfifo(folder / "model.safetensors")
    with pytest.raises(CheckpointError, match="model.safetensors is not a regular file"):
        folder_files(folder)
    os.unlink(folder / "model.safetensors")
    (folder / "elsewhere").symlink_to(tmp_path)
    with pytest.raises(CheckpointError, match="elsewhere is a link to a folder"):
        folder_files(folder)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_engine_server_local_serves_the_default_model_like_harness_run_policy_local(tmp_path):
    port = _free_port()
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "serving", "engine-server", "local", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline, listed = time.monotonic() + 240, None
        while time.monotonic() < deadline and server.poll() is None and listed is None:
            try:
                listed = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).json()
            except (httpx.HTTPError, ValueError):
                time.sleep(0.5)
        output = (tmp_path / "server.log").read_text()
        assert listed is not None, (
            f"engine-server local did not answer /v1/models (exit {server.poll()}):\n{output}"
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    bad = subprocess.run(
        [sys.executable, "-m", "serving", "engine-server", "/no/such"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (
        bad.returncode == 2
        and "'/no/such' is not a model" in bad.stderr
        and "Traceback" not in bad.stderr
    )
