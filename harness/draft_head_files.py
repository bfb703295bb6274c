"""A draft head's folder, read without torch: its file names, its config (``DraftConfig``), its
card, the tensor names and shapes each layout needs, and whether it fits a policy.

The web process lists heads, matches them to checkpoints and names their files in release manifests
with these; the head itself (``serving.engine.draft_head.DraftHead``, torch) is only loaded to train
or serve it. ``serving.engine.draft_head`` re-exports every name here.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LAYOUTS = ("eagle", "nextn")
DEFAULT_STEPS = 3
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "card.json"
# SGLang's --speculative-token-map: the draft vocabulary's token ids
TOKEN_MAP_FILE = "hot_token_map.pt"


class DraftHeadError(ValueError):
    """A draft-head folder that cannot be used with this policy; the message says what and why."""


@dataclass
class DraftConfig:
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    rms_norm_eps: float
    rope_theta: float
    vocab_size: int
    layout: str = "eagle"
    steps: int = DEFAULT_STEPS
    hot_vocab_size: int = 0  # drafts only among these most frequent tokens (TOKEN_MAP_FILE); 0: all

    @classmethod
    def for_policy(
        cls, config: Any, *, layout: str = "eagle", steps: int = DEFAULT_STEPS
    ) -> DraftConfig:
        if layout not in LAYOUTS:
            raise DraftHeadError(f"layout: {layout!r} is not one of {', '.join(LAYOUTS)}")
        heads = config.num_attention_heads
        return cls(
            hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size,
            num_attention_heads=heads,
            num_key_value_heads=config.num_key_value_heads,
            head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
            rms_norm_eps=float(config.rms_norm_eps),
            rope_theta=rope_theta_of(config),
            vocab_size=config.vocab_size,
            layout=layout,
            steps=steps,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rope_theta_of(config: Any) -> float:
    """The RoPE base of a model config (``rope_parameters.rope_theta`` in transformers 5, else
    ``rope_theta``)."""
    rope = getattr(config, "rope_parameters", None) or {}
    return float(rope.get("rope_theta", getattr(config, "rope_theta", 10000.0)))


_BLOCK = {
    "q_proj.weight": "self_attn.q_proj.weight",
    "k_proj.weight": "self_attn.k_proj.weight",
    "v_proj.weight": "self_attn.v_proj.weight",
    "o_proj.weight": "self_attn.o_proj.weight",
    "gate_proj.weight": "mlp.gate_proj.weight",
    "up_proj.weight": "mlp.up_proj.weight",
    "down_proj.weight": "mlp.down_proj.weight",
    "post_attention_layernorm": "post_attention_layernorm.weight",
}


def tensor_names(layout: str) -> dict[str, str]:
    """The head's parameter name -> the tensor name in the saved file, per layout.

    ``eagle``: EAGLE-1's names, which SGLang's ``LlamaForCausalLMEagle`` reads (it prefixes
    ``model.`` and fuses q/k/v and gate/up itself). ``nextn``: the ``mtp.*`` names of Qwen3.5/3.6
    checkpoints' MTP layer. ``tests/serving/testdata/sglang_draft_params.json`` holds what SGLang
    0.5.x loads for each."""
    if layout == "eagle":
        names = {"fc.weight": "fc.weight", "fc.bias": "fc.bias"}
        names.update({k: f"layers.0.{v}" for k, v in _BLOCK.items()})
        return names
    if layout == "nextn":
        names = {
            "fc.weight": "mtp.fc.weight",
            "enorm": "mtp.pre_fc_norm_embedding.weight",
            "hnorm": "mtp.pre_fc_norm_hidden.weight",
            "input_layernorm": "mtp.layers.0.input_layernorm.weight",
            "norm": "mtp.norm.weight",
        }
        names.update({k: f"mtp.layers.0.{v}" for k, v in _BLOCK.items()})
        return names
    raise DraftHeadError(f"layout: {layout!r} is not one of {', '.join(LAYOUTS)}")


def expected_shapes(config: DraftConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor the head's weights file must hold, by its file name, with its shape."""
    h, d, inter = config.hidden_size, config.head_dim, config.intermediate_size
    q, kv = config.num_attention_heads * d, config.num_key_value_heads * d
    shapes = {
        "fc.weight": (h, 2 * h),
        "q_proj.weight": (q, h),
        "k_proj.weight": (kv, h),
        "v_proj.weight": (kv, h),
        "o_proj.weight": (h, q),
        "gate_proj.weight": (inter, h),
        "up_proj.weight": (inter, h),
        "down_proj.weight": (h, inter),
        "post_attention_layernorm": (h,),
    }
    if config.layout == "eagle":
        shapes["fc.bias"] = (h,)
    else:
        shapes.update({"enorm": (h,), "hnorm": (h,), "input_layernorm": (h,), "norm": (h,)})
    names = tensor_names(config.layout)
    return {names[k]: v for k, v in shapes.items()}


def tensor_problems(config: DraftConfig, shapes: dict[str, tuple[int, ...]]) -> list[str]:
    """What is wrong with a weights file's tensors for this layout (missing, unexpected,
    misshapen)."""
    wanted = expected_shapes(config)
    problems = [
        f"{name}: missing (layout {config.layout} needs it)"
        for name in sorted(set(wanted) - set(shapes))
    ]
    problems += [
        f"{name}: unexpected for layout {config.layout}"
        for name in sorted(set(shapes) - set(wanted))
    ]
    problems += [
        f"{name}: shape {list(shapes[name])}, expected {list(wanted[name])}"
        for name in sorted(set(wanted) & set(shapes))
        if tuple(shapes[name]) != wanted[name]
    ]
    return problems


def layout_of_names(names: set[str]) -> str | None:
    """Which layout a file's tensor names are (None: neither)."""
    for layout in LAYOUTS:
        if names == set(tensor_names(layout).values()):
            return layout
    return None


def sglang_config(policy_config: Any, config: DraftConfig) -> dict[str, Any]:
    """The head's config.json: the policy's, with the draft architecture and one layer (what
    SGLang's draft model runner reads), and this project's ``harness_draft`` section."""
    data = policy_config.to_dict() if hasattr(policy_config, "to_dict") else dict(policy_config)
    data = {k: v for k, v in data.items() if not k.startswith("_")}
    if config.layout == "eagle":
        data["architectures"] = ["LlamaForCausalLMEagle"]
        data["num_hidden_layers"] = 1
    else:
        data["num_nextn_predict_layers"] = 1
    data["harness_draft"] = config.to_dict()
    return data


def read_card(head_dir: str | Path) -> dict[str, Any]:
    path = Path(head_dir) / CARD_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DraftHeadError(f"{path}: not readable JSON ({exc})") from exc


def read_config(head_dir: str | Path) -> DraftConfig:
    folder = Path(head_dir)
    path = folder / CONFIG_FILE
    if not path.is_file():
        raise DraftHeadError(
            f"{folder}: no {CONFIG_FILE}; a draft-head folder has config.json, "
            f"{WEIGHTS_FILE} and {CARD_FILE} (python -m training mtp writes one)"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DraftHeadError(f"{path}: not readable JSON ({exc})") from exc
    section = raw.get("harness_draft") if isinstance(raw, dict) else None
    if not isinstance(section, dict):
        raise DraftHeadError(
            f"{path}: harness_draft: missing; this config was not written by python -m training mtp"
        )
    try:
        config = DraftConfig(**section)
    except TypeError as exc:
        raise DraftHeadError(f"{path}: harness_draft: {exc}") from exc
    if config.layout not in LAYOUTS:
        raise DraftHeadError(
            f"{path}: harness_draft.layout: {config.layout!r} is not one of {', '.join(LAYOUTS)}"
        )
    if not isinstance(config.steps, int) or config.steps < 1:
        raise DraftHeadError(
            f"{path}: harness_draft.steps: {config.steps!r} must be an integer >= 1"
        )
    return config


def head_tensors(head_dir: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes in the head's weights file (read from the header; no weights
    loaded)."""
    from safetensors import SafetensorError, safe_open

    path = Path(head_dir) / WEIGHTS_FILE
    if not path.is_file():
        raise DraftHeadError(f"{Path(head_dir)}: no {WEIGHTS_FILE}")
    try:
        with safe_open(str(path), framework="numpy") as handle:  # the header only, without torch
            return {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}  # noqa: SIM118 - safe_open is not iterable
    except (OSError, SafetensorError) as exc:
        raise DraftHeadError(f"{path}: not a safetensors file ({exc})") from exc


def policy_mismatch(config: DraftConfig, policy_config: Any) -> list[str]:
    """Where the head's dimensions differ from the policy's (a head made for another model)."""
    expected = DraftConfig.for_policy(policy_config, layout=config.layout, steps=config.steps)
    return [
        f"harness_draft.{name}: the head has {getattr(config, name)}, "
        f"the policy {getattr(expected, name)}; "
        "this head was made for another model"
        for name in (
            "hidden_size",
            "intermediate_size",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "vocab_size",
        )
        if getattr(config, name) != getattr(expected, name)
    ]
