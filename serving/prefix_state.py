"""A Harness prefix's prefilled state on disk: llama.cpp's slot save and restore, once per
(model, prefix).

Every request under a Harness starts with the same tokens: the chat template's opening and the
static blocks of its system prompt (``harness.prompt_sharing.shared_prefix``: 1,326 of the 1,576
prompt tokens of the README's first request). A process's first request would prefill them within
its budget (7-9 s of the 10 s on 2 cores, issue 51: the README's first request fell back).
``LlamaServer.hold_prefix`` puts them in a slot before a request starts, from the first source that
has them:

1. a slot of this process that holds them already (nothing to do);
2. this (model, prefix)'s state file: llama.cpp restores the slot's keys and values from it
   (``POST /slots/{id}?action=restore``; tens of milliseconds);
3. else the prefix is prefilled once and the slot's state saved to that file
   (``?action=save``) for every later process.

The files are in ``$HARNESS_PREFIX_STATES``, else ``<model cache>/prefix-states``, named by the
model's identity (the GGUF file's path, size and modification time, and the flash-attention
setting, which changes the cache's layout) and a digest of the prefix's token ids, so a state is
only ever restored into the model and prefix it was saved from. A save is written under a temporary
name and renamed into place, so a concurrent process never reads half a file. At most ``KEEP``
files stay, the least recently used removed first (a restore touches its file); each is ~23 KB per
token for SmolLM2-135M (31 MB for the demo Harness's prefix).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import socket
from array import array
from pathlib import Path

STATES_ENV = "HARNESS_PREFIX_STATES"
#: State files kept in the folder; the least recently used go first.
KEEP = 16
SUFFIX = ".state"
#: Seconds a save or restore request may take (a 31 MB file: well under one here).
ACTION_TIMEOUT_S = 60.0


def state_dir() -> Path:
    """The folder of the prefix states: ``$HARNESS_PREFIX_STATES``, else
    ``<model cache>/prefix-states``."""
    from harness.model_cache import model_cache_dir

    named = os.environ.get(STATES_ENV, "").strip()
    folder = Path(named) if named else model_cache_dir() / "prefix-states"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def model_key(gguf: Path, *, flash_attn: bool) -> str:
    """The identity of the model a state belongs to: the GGUF file (path, size, mtime) and the
    cache layout (flash attention stores V untransposed)."""
    stat = gguf.stat()
    text = f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|fa={int(flash_attn)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def state_name(key: str, tokens: list[int]) -> str:
    """The file name of ``tokens``' state under model ``key`` (llama.cpp takes a bare name)."""
    digest = hashlib.sha256(array("q", tokens).tobytes()).hexdigest()[:24]
    return f"prefix-{key}-{len(tokens)}-{digest}{SUFFIX}"


def prune(folder: Path, *, keep: int = KEEP) -> list[Path]:
    """Remove all but the ``keep`` most recently used state files (and leftovers of saves that
    died); the removed files."""
    files = []
    for path in folder.glob(f"*{SUFFIX}"):
        try:
            files.append((path.stat().st_mtime, path))
        except FileNotFoundError:
            continue
    files.sort(reverse=True)
    removed = [path for _, path in files[keep:]]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed


class SlotActionError(RuntimeError):
    """llama.cpp refused a slot save or restore; the message is its own."""


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def slot_action(socket_path: str, api_key: str, slot: int, action: str, filename: str) -> dict:
    """``POST /slots/{slot}?action={action}`` (save or restore ``filename`` in the server's
    ``slot_save_path``) on llama.cpp's own listener; its JSON answer."""
    connection = _UnixConnection(socket_path, ACTION_TIMEOUT_S)
    try:
        connection.request(
            "POST",
            f"/slots/{int(slot)}?action={action}",
            body=json.dumps({"filename": filename}),
            headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        raw = response.read()
    except OSError as exc:
        raise SlotActionError(f"slot {action}: {type(exc).__name__}: {exc}") from None
    finally:
        connection.close()
    try:
        answer = json.loads(raw or b"{}")
    except ValueError:
        answer = {"error": raw[:200].decode("utf-8", "replace")}
    if response.status != 200:
        error = answer.get("error", answer) if isinstance(answer, dict) else answer
        message = error.get("message", error) if isinstance(error, dict) else error
        raise SlotActionError(f"slot {action}: HTTP {response.status}: {message}")
    return answer


def replace_into(folder: Path, tmp_name: str, final_name: str) -> Path:
    """Rename a finished save into place (atomic: a concurrent reader sees the old file or the
    new)."""
    final = folder / final_name
    os.replace(folder / tmp_name, final)
    return final
