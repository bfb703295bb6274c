"""Where training and self-evaluation cases come from, and the held-out split.

Default: the synthetic world of ``evaluation.world`` (seed 0). Its Live-Stream
QA set is split once, deterministically: the first ``HELD_OUT`` cases are
held out for evaluation (the ablation's Live-Stream QA and Harness-Variant QA
subsets come from them) and never reach training; the rest are training and
RL tasks. A user's case file (hs-case/1 JSONL) is used whole for training,
with the catalogue it names (``catalogue.json`` beside it) or the demo one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HELD_OUT = 300
WORLD_SEED = 0


@dataclass
class CaseSource:
    cases: list[dict[str, Any]]
    catalogue: Any
    name: str


@functools.lru_cache(maxsize=2)
def _world(seed: int) -> dict[str, Any]:
    from evaluation.world.sets import build_sets

    return build_sets(seed=seed)


def world_catalogue(seed: int = WORLD_SEED):
    return _world(seed)["catalogue"]


def world_set(name: str, seed: int = WORLD_SEED) -> list[dict[str, Any]]:
    return _world(seed)["sets"][name]


def held_out_cases(seed: int = WORLD_SEED) -> list[dict[str, Any]]:
    return world_set("live_qa", seed)[:HELD_OUT]


def training_cases(path: str = "", *, limit: int, seed: int = WORLD_SEED) -> CaseSource:
    """Training cases: a user's file, or the world's Live-Stream QA cases after the held-out
    ones."""
    if not path:
        return CaseSource(
            cases=world_set("live_qa", seed)[HELD_OUT:][:limit],
            catalogue=world_catalogue(seed),
            name=f"world:{seed}:live_qa[{HELD_OUT}:]",
        )
    from evaluation.cases import load_cases
    from harness.livestream import Catalogue, demo_catalogue

    file = Path(path)
    cases = load_cases(file)[:limit]
    beside = file.parent / "catalogue.json"
    catalogue = Catalogue.load(beside) if beside.is_file() else demo_catalogue()
    return CaseSource(cases=cases, catalogue=catalogue, name=str(file))
