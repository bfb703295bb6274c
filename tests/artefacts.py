"""Expensive test artefacts, built once per test run and shared by every pytest-xdist worker.

A session-scoped fixture is built once per *process*; under ``pytest -n 2`` that is twice. The
artefacts here (a generated world, a trained tiny checkpoint, an MTP head, an ablation folder) take
seconds to minutes to build and are only read by the tests that use them, so the first worker that
needs one builds it under a file lock in the run's shared temporary folder, and the others wait for
it and reuse it. A build that fails leaves nothing behind: the next caller builds it again and sees
the same error.

Tests that *change* an artefact (a resumed run, an edited folder) copy it first
(:func:`private_copy`), so no test sees another's edits.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock


def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder every worker of this test run sees (xdist gives each worker its own basetemp
    under one parent; without xdist it is the basetemp itself)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-artefacts"
    root.mkdir(parents=True, exist_ok=True)
    return root


def build_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The folder ``name``, built by ``build(folder)`` the first time any worker asks for it."""
    root = shared_root(tmp_path_factory)
    target = root / name
    done = root / f"{name}.done"
    if done.exists():
        return target
    with FileLock(root / f"{name}.lock"):
        if done.exists():
            return target
        if target.exists():  # a build that failed part-way: start again
            shutil.rmtree(target)
        target.mkdir(parents=True)
        try:
            build(target)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        done.touch()
    return target


def private_copy(source: Path, destination: Path) -> Path:
    """A copy of a shared artefact for a test that changes it."""
    shutil.copytree(source, destination, symlinks=True)
    return destination


def world(tmp_path_factory: pytest.TempPathFactory, seed: int) -> Path:
    """``python -m evaluation generate --seed SEED``'s folder (catalogue and every
    docs/architecture.md §6 set), once per run (the generator's own tests,
    tests/evaluation/test_world.py, generate theirs)."""
    from evaluation.world.sets import generate

    return build_once(
        tmp_path_factory, f"world-{seed}", lambda out: generate(out=out, seed=seed, check=False)
    )


def replay_cases(tmp_path_factory: pytest.TempPathFactory, n: int, *, seed: int = 3) -> Path:
    """A case file of the first ``n`` cases of world ``seed``'s replay set, beside that world's
    catalogue (the replay reads the catalogue next to its case file)."""
    source = world(tmp_path_factory, seed)

    def build(out: Path) -> None:
        shutil.copy(source / "catalogue.json", out / "catalogue.json")
        lines = (source / "replay.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)[:n]
        (out / "replay.jsonl").write_text("".join(lines), encoding="utf-8")

    return build_once(tmp_path_factory, f"world-{seed}-replay-{n}", build) / "replay.jsonl"


#: ``python -m training mtp`` on the tiny model: 3 cases, 4 steps, a checkpoint every 2 (both kept).
TINY_MTP_ARGS = (
    "--model",
    "tiny",
    "--max-cases",
    "3",
    "--max-steps",
    "4",
    "--logging-steps",
    "2",
    "--save-steps",
    "2",
    "--save-total-limit",
    "2",
    "--rollout-max-new-tokens",
    "12",
    "--variant-pool-size",
    "1",
    "--learning-rate",
    "1e-3",
)


def _training_command(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    command: str,
    args: tuple[str, ...],
    folder: str,
) -> tuple[Path, subprocess.CompletedProcess]:
    """``python -m training COMMAND ARGS --output-dir .../FOLDER`` run once per test run (a failure
    is raised with its stderr), and what it printed."""

    def build(out: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "training", command, *args, "--output-dir", str(out / folder)],
            capture_output=True,
            text=True,
            timeout=500,
        )
        (out / "command.json").write_text(
            json.dumps(
                {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
            )
        )
        if done.returncode != 0:
            raise AssertionError(
                f"python -m training {command} exited {done.returncode}:\n{done.stderr[-3000:]}"
            )

    built = build_once(tmp_path_factory, name, build)
    printed = json.loads((built / "command.json").read_text())
    return built / folder, subprocess.CompletedProcess(
        [], printed["returncode"], printed["stdout"], printed["stderr"]
    )


def tiny_mtp_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess]:
    """A real ``python -m training mtp`` run folder on the tiny model (``TINY_MTP_ARGS``, about 25
    s), and what the command printed. Read it, or resume a :func:`private_copy` of it."""
    return _training_command(tmp_path_factory, "tiny-mtp", "mtp", TINY_MTP_ARGS, "run")


#: ``python -m training ablation`` on the tiny-smoke preset with fewer items (every step still
#: runs).
TINY_ABLATION_ARGS = (
    "--preset",
    "tiny-smoke",
    "--eval-cases",
    "2",
    "--eval-prompt-robustness",
    "1",
    "--eval-ifeval",
    "2",
    "--train-cases",
    "4",
)


def tiny_ablation(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess]:
    """A finished tiny ablation folder made by the real command (``TINY_ABLATION_ARGS``: two SFT
    cells of two phases each, OPD, RL and every evaluation), and what the command printed. The
    library's test reads it and resumes a copy; the studio's shows a copy on a run page after a real
    worker ran the command over it."""
    return _training_command(
        tmp_path_factory, "tiny-ablation", "ablation", TINY_ABLATION_ARGS, "ablation"
    )
