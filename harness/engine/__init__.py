"""The local engine: the CPU inference path of every local model in the project.

``engine_for(checkpoint)`` gives the process's engine for a checkpoint; the
runtime's local policy (``harness.policies.local``), the evaluation CLI, training
self-evaluation and the CPU serving route (``python -m serving engine-server``)
all generate through it; with a draft head (``harness.engine.draft_head``) it decodes
speculatively (``harness.engine.speculative``). See ``docs/runtime.md`` ("The local engine") and
``benchmarks/local_engine.py``.
"""

from harness.engine.engine import (
    Completion,
    Engine,
    EngineError,
    Request,
    SamplingParams,
    engine_for,
    sample,
)
from harness.engine.model import (
    QUANTIZATIONS,
    EngineModel,
    SequenceKV,
    UnsupportedModel,
    unsupported_reason,
)
from harness.engine.prefix import MIN_REUSED_PREFIX, PrefixStore
from harness.engine.speculative import SpecStats, Speculator

__all__ = [
    "MIN_REUSED_PREFIX", "QUANTIZATIONS", "Completion", "Engine", "EngineError", "EngineModel", "PrefixStore",
    "Request", "SamplingParams", "SequenceKV", "SpecStats", "Speculator", "UnsupportedModel", "engine_for", "sample",
    "unsupported_reason",
]
