"""The environment of a subprocess in which llama.cpp stops late (``sitecustomize.py`` here)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LATE_STOP_S = 2.0


def late_stop_env(stop_s: float = LATE_STOP_S, first_event_s: float = 0.0) -> dict[str, str]:
    """Variables that make a Python subprocess's llama.cpp compute on for ``stop_s`` seconds after a
    call is stopped, with one thread (the tiny model); ``first_event_s`` holds each call's first
    event that long (a slow prefill)."""
    return {
        "PYTHONPATH": f"{Path(__file__).parent}{os.pathsep}{ROOT}",
        "SLOW_LLAMA_STOP_S": str(stop_s),
        "SLOW_LLAMA_FIRST_EVENT_S": str(first_event_s),
        "OMP_NUM_THREADS": "1",
        "HARNESS_LLAMA_THREADS": "1",
    }
