"""Tests of ``training/``.

pytest puts ``tests/`` on ``sys.path`` (it has no ``__init__.py``), so this package is what
``import training`` finds inside the test run. The checkout's own ``training/`` is added to its
path, so ``training.sft_config`` and the rest are the code beside these tests, not whatever the
virtualenv's editable install points at (another checkout, for a git worktree).
"""

from pathlib import Path

__path__.append(str(Path(__file__).resolve().parents[2] / "training"))  # noqa: F821
