"""The torch engine: what no inference library gives this project.

llama.cpp (``serving.llama_cpp``) is the CPU route that answers the agent:
it decodes ~3x faster at the agent's context length (``benchmarks/local_engine.py``).
This engine is kept for what it cannot do:

- the exact fp32 reference that GGUF exports and quantizations are measured
  against (``benchmarks/quantization_quality.py``, ``torch:`` policy specs);
- speculative decoding with our own MTP draft head (``serving.engine.draft_head``,
  ``serving.engine.speculative``), which llama.cpp cannot load;
- the MTP head's training data: rollouts and hidden states of the live
  policy (``training.mtp_rollouts``);
- rollouts on live weights during training, without an export per step
  (``training.sampling_policy``);
- weight-only int8 as a measured alternative (``serving.engine.kernels``).

``engine_for(checkpoint)`` gives the process's engine for a checkpoint; the
``torch`` local route (``serving.engine.policy``, entry point in
``pyproject.toml``) and the engine server's fp32/int8 backends generate through
it. See ``docs/runtime.md`` ("The torch engine").
"""

from serving.engine.engine import (
    Completion,
    Engine,
    EngineError,
    Request,
    engine_for,
)
from serving.engine.model import (
    QUANTIZATIONS,
    EngineModel,
    SequenceKV,
    UnsupportedModel,
    unsupported_reason,
)
from serving.engine.prefix import MIN_REUSED_PREFIX, PrefixStore
from serving.engine.sampling import SamplingParams, sample
from serving.engine.speculative import SpecStats, Speculator

__all__ = [
    "MIN_REUSED_PREFIX",
    "QUANTIZATIONS",
    "Completion",
    "Engine",
    "EngineError",
    "EngineModel",
    "PrefixStore",
    "Request",
    "SamplingParams",
    "SequenceKV",
    "SpecStats",
    "Speculator",
    "UnsupportedModel",
    "engine_for",
    "sample",
    "unsupported_reason",
]
