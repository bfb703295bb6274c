"""The GGUF export cache keeps one export per checkpoint and format: exports of a checkpoint that
was retrained or deleted, and those an older export version wrote, are removed once they are not
new."""

from __future__ import annotations

import os
import shutil
import time

from harness.checkpoints import fingerprint
from harness.model_cache import tiny_model_dir
from serving import gguf
from serving.gguf import EXPORT_VERSION, STALE_AFTER_S, gguf_for_checkpoint, prune_stale_exports


def _age(path, seconds):
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_exports_of_retrained_or_deleted_checkpoints_are_removed_once_not_new(
    tmp_path, monkeypatch
):
    first = shutil.copytree(tiny_model_dir(), tmp_path / "first")
    second = shutil.copytree(tiny_model_dir(), tmp_path / "second")
    monkeypatch.setenv("HARNESS_STUDIO_HOME", str(tmp_path / "home"))
    # the cache's bookkeeping is under test, not the export (tests/engine/test_llama_cpp.py runs
    # real ones)
    monkeypatch.setattr(
        gguf, "export_gguf", lambda checkpoint, out, *, quantization: out.write_bytes(b"GGUF")
    )
    folder = tmp_path / "home" / "models" / "gguf"

    old_first = gguf_for_checkpoint(first, quantization="F32")
    second_f32 = gguf_for_checkpoint(second, quantization="F32")
    assert (folder / f"{old_first.name}.source").read_text().strip() == str(first)
    assert f"first-{fingerprint(first)[:16]}-v{EXPORT_VERSION}." in old_first.name
    old_version = folder / "first-0123456789abcdef.Q8_0.gguf"  # written before EXPORT_VERSION 2
    old_version.write_bytes(b"GGUF")
    assert f"-v{EXPORT_VERSION}." not in old_version.name

    # keyed on harness.checkpoints' fingerprint: a touched file with the same bytes asks for the
    # same export
    weights = next(first.glob("*.safetensors"))
    os.utime(weights, (time.time() + 5, time.time() + 5))
    assert gguf_for_checkpoint(first, quantization="F32") == old_first
    # retrained: the weights change, so the next export has another name
    weights.write_bytes(weights.read_bytes() + b" ")
    new_first = gguf_for_checkpoint(first, quantization="F32")
    assert new_first != old_first
    assert (
        old_first.is_file() and old_version.is_file()
    )  # not removed while new: a process may have just resolved it

    for path in (old_first, old_version, second_f32):
        _age(path, STALE_AFTER_S + 60)
    shutil.rmtree(second)
    assert prune_stale_exports() == sorted([old_version, old_first, second_f32])
    assert sorted(p.name for p in folder.iterdir()) == [new_first.name, f"{new_first.name}.source"]
    assert not list((tmp_path / "home" / "models").glob(f".gguf-{old_first.name}.lock"))

    # a current export of a checkpoint that is still there stays, however old
    _age(new_first, STALE_AFTER_S * 10)
    assert prune_stale_exports() == [] and new_first.is_file()
