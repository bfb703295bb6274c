"""Benchmark: what fingerprinting every byte of a checkpoint costs, first and when its digests are
kept.

A release covers every file of its checkpoint and draft-head folders (issue 28 item 2), so
``harness.checkpoints.fingerprint`` reads every byte once per process and keeps each file's digest
keyed by its stats. This times, on the default model's folder (SmolLM2-135M, fp32, about 540 MB):

- the baseline measured in the same process: the fingerprint releases used before, sha256 over
  config.json, generation_config.json and each weight file's size with its first and last MiB
  (reimplemented here only to compare);
- the first full fingerprint (every byte read and hashed; the OS page cache warm, as on a studio
  host that served the model: the script reads the folder once before timing);
- a repeat (what a registry or release page pays after the first): the digests kept in memory.

    .venv/bin/python benchmarks/checkpoint_fingerprint.py [--checkpoint local] [--repeats 5]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import checkpoints  # noqa: E402


def sampled_fingerprint(path: Path) -> str:
    """The pre-issue-28 fingerprint: two JSON files and each weight file's first and last MiB."""
    digest = hashlib.sha256()
    for name in ("config.json", "generation_config.json"):
        if (path / name).is_file():
            digest.update(name.encode() + b"\0" + (path / name).read_bytes())
    for p in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        size = p.stat().st_size
        digest.update(f"{p.name}\0{size}\0".encode())
        with p.open("rb") as fh:
            digest.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(-(1 << 20), 2)
                digest.update(fh.read())
    return digest.hexdigest()


def _timed(fn, repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", default="local")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    folder = checkpoints.resolve_checkpoint(args.checkpoint)
    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    for f in folder.rglob("*"):  # warm the page cache, so the figures are hashing, not the disk
        if f.is_file():
            f.read_bytes()
    sampled = _timed(lambda: sampled_fingerprint(folder), args.repeats)
    first = []
    for _ in range(args.repeats):
        checkpoints._DIGESTS.clear()
        first += _timed(lambda: checkpoints.fingerprint(folder), 1)
    kept = _timed(lambda: checkpoints.fingerprint(folder), args.repeats)
    print(
        f"checkpoint {folder} ({len(checkpoints.folder_files(folder))} files, {size / 1e6:.0f} MB)"
    )
    print(
        "  baseline: sampled fingerprint (2 MiB per weight file)   "
        f"median {statistics.median(sampled) * 1000:8.1f} ms"
    )
    print(
        "  every byte, first read in a process                 "
        f"median {statistics.median(first) * 1000:8.1f} ms"
        f"  ({size / statistics.median(first) / 1e6:.0f} MB/s)"
    )
    print(
        "  every byte, digests kept (a page's repeat view)     "
        f"median {statistics.median(kept) * 1000:8.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
