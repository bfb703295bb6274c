"""The MTP draft head: one decoder block that guesses the policy's next tokens (SPEC §9).

SmolLM2 and the other Llama-family policies ship no multi-token-prediction layers,
so the head is added beside the frozen policy, as EAGLE does and as SGLang serves
Llama models (``--speculative-algorithm EAGLE``). It is the NextN shape of
DeepSeek-V3 and Qwen3.5 MTP reduced to its Llama form:

    x   = fc([embed(token_{t+1}); h_t])        h_t: the policy's final-normalised hidden state
    x   = x + attn(x)                         one Llama block; its own keys and values
    x   = x + mlp(post_norm(x))
    out = x      -> logits = policy_lm_head(out), and ``out`` is the next step's h

sharing the policy's frozen token embeddings and LM head, applied recursively for
K draft steps (the second step is fed its own ``out`` and the token it drafted).
Layout ``eagle`` (the default, what SGLang loads for Llama) has a bias on ``fc``
and no norm before attention or the head; layout ``nextn`` is the same block with
the NextN norms (``enorm``/``hnorm`` before ``fc``, the block's input norm and a
final norm before the shared head). Both train and run here, and each is saved
in the format SGLang loads for it (``tensor_names``, ``sglang_config``).

The same module is trained (``training.mtp_trainer``, autograd through its
parameters) and run by the engine (``harness.engine.speculative``, under
inference mode, with the attention over the sequence's cache done by the caller):
``fuse`` -> ``project`` -> attention -> ``finish`` -> ``logits``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from harness.engine.model import RopeTable, rms_norm, rope_theta_of, rotate

LAYOUTS = ("eagle", "nextn")
DEFAULT_STEPS = 3
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "card.json"
TOKEN_MAP_FILE = "hot_token_map.pt"  # SGLang's --speculative-token-map: the draft vocabulary's token ids


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
    def for_policy(cls, config: Any, *, layout: str = "eagle", steps: int = DEFAULT_STEPS) -> DraftConfig:
        if layout not in LAYOUTS:
            raise DraftHeadError(f"layout: {layout!r} is not one of {', '.join(LAYOUTS)}")
        heads = config.num_attention_heads
        return cls(hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
                   num_attention_heads=heads, num_key_value_heads=config.num_key_value_heads,
                   head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
                   rms_norm_eps=float(config.rms_norm_eps), rope_theta=rope_theta_of(config),
                   vocab_size=config.vocab_size, layout=layout, steps=steps)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class DraftHead(nn.Module):
    """The head's own weights; ``embed`` and ``lm_head`` are the policy's (frozen, never saved)."""

    def __init__(self, config: DraftConfig, *, embed: torch.Tensor, lm_head: torch.Tensor) -> None:
        super().__init__()
        self.config = config
        h, d = config.hidden_size, config.head_dim
        n_q, n_kv = config.num_attention_heads, config.num_key_value_heads
        self.nextn = config.layout == "nextn"
        self.fc = nn.Linear(2 * h, h, bias=not self.nextn)
        self.q_proj = nn.Linear(h, n_q * d, bias=False)
        self.k_proj = nn.Linear(h, n_kv * d, bias=False)
        self.v_proj = nn.Linear(h, n_kv * d, bias=False)
        self.o_proj = nn.Linear(n_q * d, h, bias=False)
        self.gate_proj = nn.Linear(h, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(h, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, h, bias=False)
        self.post_attention_layernorm = nn.Parameter(torch.ones(h))
        if self.nextn:
            self.enorm = nn.Parameter(torch.ones(h))
            self.hnorm = nn.Parameter(torch.ones(h))
            self.input_layernorm = nn.Parameter(torch.ones(h))
            self.norm = nn.Parameter(torch.ones(h))
        # shared with the policy: plain attributes, so they are neither trained nor in state_dict()
        self.embed = embed.detach()
        self.lm_head = lm_head.detach()
        self.rope = RopeTable(d, config.rope_theta)
        self.scale = d ** -0.5
        self.hot: torch.Tensor | None = None  # the draft vocabulary (token ids), None: the whole vocabulary
        self._hot_head: torch.Tensor | None = None

    def set_hot_tokens(self, ids: torch.Tensor | None) -> None:
        """Draft only among ``ids`` (EAGLE's reduced draft vocabulary, SGLang's token map): the LM
        head shrinks to those rows, which is most of a draft step's cost on a 49k vocabulary. The
        policy still verifies every token, so only the acceptance can change, never the output."""
        if ids is None:
            self.hot, self._hot_head, self.config.hot_vocab_size = None, None, 0
            return
        ids = torch.as_tensor(ids, dtype=torch.long).flatten()
        if ids.numel() == 0 or int(ids.min()) < 0 or int(ids.max()) >= self.config.vocab_size:
            raise DraftHeadError(f"{TOKEN_MAP_FILE}: token ids must be in 0..{self.config.vocab_size - 1}")
        if ids.unique().numel() != ids.numel():
            raise DraftHeadError(f"{TOKEN_MAP_FILE}: token ids repeat")
        self.hot = ids
        self._hot_head = self.lm_head[ids].contiguous()
        self.config.hot_vocab_size = int(ids.numel())

    @classmethod
    def for_policy(cls, hf_model: Any, *, layout: str = "eagle", steps: int = DEFAULT_STEPS) -> DraftHead:
        """A new head for a policy. The block starts as the identity (small random q/k/v and
        gate/up, zero attention and MLP outputs) and ``fc`` passes the hidden state through with a
        little of the token embedding, so the first guess is the policy's own next-token
        distribution. (A copy of the policy's last decoder layer was tried first: without the
        layer's input norm, which the eagle layout does not have, its activations are far off scale
        and training diverged on the demo's rollouts.)"""
        config = DraftConfig.for_policy(hf_model.config, layout=layout, steps=steps)
        embed = hf_model.get_input_embeddings().weight.detach().float()
        head = hf_model.get_output_embeddings()
        lm_head = (head.weight if head is not None else embed).detach().float()
        draft = cls(config, embed=embed, lm_head=lm_head)
        with torch.no_grad():
            h = config.hidden_size
            draft.fc.weight.zero_()
            draft.fc.weight[:, h:] = torch.eye(h)
            draft.fc.weight[:, :h] = torch.eye(h) * 0.1
            if draft.fc.bias is not None:
                draft.fc.bias.zero_()
            for linear in (draft.q_proj, draft.k_proj, draft.v_proj, draft.gate_proj, draft.up_proj):
                linear.weight.normal_(0.0, 0.02)
            draft.o_proj.weight.zero_()
            draft.down_proj.weight.zero_()
        return draft

    # -- the block, piece by piece ------------------------------------------------------------
    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, weight, self.config.rms_norm_eps)

    def fuse(self, hidden: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The block's input from the policy's (or the previous step's) hidden state and a token."""
        e = self.embed[tokens]
        if self.nextn:
            e, hidden = self._norm(e, self.enorm), self._norm(hidden, self.hnorm)
        return self.fc(torch.cat([e, hidden], dim=-1))

    def project(self, x: torch.Tensor, positions: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q ``[n, heads, d]``, k and v ``[n, kv_heads, d]`` (RoPE applied) for the block's attention."""
        n, c = x.shape[0], self.config
        a = self._norm(x, self.input_layernorm) if self.nextn else x
        cos, sin = self.rope(positions)
        cos, sin = cos[:, None], sin[:, None]
        q = rotate(self.q_proj(a).view(n, c.num_attention_heads, c.head_dim), cos, sin)
        k = rotate(self.k_proj(a).view(n, c.num_key_value_heads, c.head_dim), cos, sin)
        v = self.v_proj(a).view(n, c.num_key_value_heads, c.head_dim)
        return q, k, v

    def finish(self, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """The block's output (the next step's hidden state) from its input and attention ``[n, heads*d]``."""
        x = x + self.o_proj(attn)
        m = self._norm(x, self.post_attention_layernorm)
        return x + self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m))

    def logits(self, out: torch.Tensor) -> torch.Tensor:
        """Logits over the whole vocabulary (training)."""
        if self.nextn:
            out = self._norm(out, self.norm)
        return F.linear(out, self.lm_head)

    def draft_logits(self, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits over the draft vocabulary and its token ids (None: the whole vocabulary)."""
        if self._hot_head is None:
            return self.logits(out), None
        if self.nextn:
            out = self._norm(out, self.norm)
        return F.linear(out, self._hot_head), self.hot

    def restrict(self, logits: torch.Tensor) -> torch.Tensor:
        """Full-vocabulary logits with the tokens outside the draft vocabulary at -inf."""
        if self.hot is None:
            return logits
        keep = torch.zeros(logits.shape[-1], dtype=torch.bool)
        keep[self.hot] = True
        return logits.masked_fill(~keep, float("-inf"))

    # -- files ------------------------------------------------------------------------------
    def save(self, out_dir: str | Path, *, policy_config: Any, card: dict[str, Any] | None = None) -> Path:
        """Write the head as SGLang loads it for its layout (``config.json`` + ``model.safetensors``,
        tensor names from ``tensor_names``), plus ``card.json``. The policy's embeddings and LM
        head are not written: SGLang's EAGLE worker and this engine take them from the policy."""
        from safetensors.torch import save_file

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        names = tensor_names(self.config.layout)
        state = {names[k]: v.detach().float().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(out / WEIGHTS_FILE), metadata={"format": "pt"})
        token_map = out / TOKEN_MAP_FILE
        if self.hot is not None:
            torch.save(self.hot.clone(), token_map)
        elif token_map.exists():
            token_map.unlink()
        (out / CONFIG_FILE).write_text(json.dumps(sglang_config(policy_config, self.config), indent=2) + "\n",
                                       encoding="utf-8")
        if card is not None:
            (out / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return out


_BLOCK = {"q_proj.weight": "self_attn.q_proj.weight", "k_proj.weight": "self_attn.k_proj.weight",
          "v_proj.weight": "self_attn.v_proj.weight", "o_proj.weight": "self_attn.o_proj.weight",
          "gate_proj.weight": "mlp.gate_proj.weight", "up_proj.weight": "mlp.up_proj.weight",
          "down_proj.weight": "mlp.down_proj.weight",
          "post_attention_layernorm": "post_attention_layernorm.weight"}


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
        names = {"fc.weight": "mtp.fc.weight", "enorm": "mtp.pre_fc_norm_embedding.weight",
                 "hnorm": "mtp.pre_fc_norm_hidden.weight", "input_layernorm": "mtp.layers.0.input_layernorm.weight",
                 "norm": "mtp.norm.weight"}
        names.update({k: f"mtp.layers.0.{v}" for k, v in _BLOCK.items()})
        return names
    raise DraftHeadError(f"layout: {layout!r} is not one of {', '.join(LAYOUTS)}")


def expected_shapes(config: DraftConfig) -> dict[str, tuple[int, ...]]:
    """Every tensor the head's weights file must hold, by its file name, with its shape."""
    h, d, inter = config.hidden_size, config.head_dim, config.intermediate_size
    q, kv = config.num_attention_heads * d, config.num_key_value_heads * d
    shapes = {"fc.weight": (h, 2 * h), "q_proj.weight": (q, h), "k_proj.weight": (kv, h), "v_proj.weight": (kv, h),
              "o_proj.weight": (h, q), "gate_proj.weight": (inter, h), "up_proj.weight": (inter, h),
              "down_proj.weight": (h, inter), "post_attention_layernorm": (h,)}
    if config.layout == "eagle":
        shapes["fc.bias"] = (h,)
    else:
        shapes.update({"enorm": (h,), "hnorm": (h,), "input_layernorm": (h,), "norm": (h,)})
    names = tensor_names(config.layout)
    return {names[k]: v for k, v in shapes.items()}


def tensor_problems(config: DraftConfig, shapes: dict[str, tuple[int, ...]]) -> list[str]:
    """What is wrong with a weights file's tensors for this layout (missing, unexpected, misshapen)."""
    wanted = expected_shapes(config)
    problems = [f"{name}: missing (layout {config.layout} needs it)" for name in sorted(set(wanted) - set(shapes))]
    problems += [f"{name}: unexpected for layout {config.layout}" for name in sorted(set(shapes) - set(wanted))]
    problems += [f"{name}: shape {list(shapes[name])}, expected {list(wanted[name])}"
                 for name in sorted(set(wanted) & set(shapes)) if tuple(shapes[name]) != wanted[name]]
    return problems


def layout_of_names(names: set[str]) -> str | None:
    """Which layout a file's tensor names are (None: neither)."""
    for layout in LAYOUTS:
        if names == set(tensor_names(layout).values()):
            return layout
    return None


def sglang_config(policy_config: Any, config: DraftConfig) -> dict[str, Any]:
    """The head's config.json: the policy's, with the draft architecture and one layer (what SGLang's
    draft model runner reads), and this project's ``harness_draft`` section."""
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
        raise DraftHeadError(f"{folder}: no {CONFIG_FILE}; a draft-head folder has config.json, "
                             f"{WEIGHTS_FILE} and {CARD_FILE} (python -m training mtp writes one)")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DraftHeadError(f"{path}: not readable JSON ({exc})") from exc
    section = raw.get("harness_draft") if isinstance(raw, dict) else None
    if not isinstance(section, dict):
        raise DraftHeadError(f"{path}: harness_draft: missing; this config was not written by "
                             "python -m training mtp")
    try:
        config = DraftConfig(**section)
    except TypeError as exc:
        raise DraftHeadError(f"{path}: harness_draft: {exc}") from exc
    if config.layout not in LAYOUTS:
        raise DraftHeadError(f"{path}: harness_draft.layout: {config.layout!r} is not one of {', '.join(LAYOUTS)}")
    if not isinstance(config.steps, int) or config.steps < 1:
        raise DraftHeadError(f"{path}: harness_draft.steps: {config.steps!r} must be an integer >= 1")
    return config


def head_tensors(head_dir: str | Path) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes in the head's weights file (read from the header; no weights loaded)."""
    from safetensors import SafetensorError, safe_open

    path = Path(head_dir) / WEIGHTS_FILE
    if not path.is_file():
        raise DraftHeadError(f"{Path(head_dir)}: no {WEIGHTS_FILE}")
    try:
        with safe_open(str(path), framework="pt") as handle:
            return {name: tuple(handle.get_slice(name).get_shape()) for name in handle.keys()}  # noqa: SIM118 - safe_open is not iterable
    except (OSError, SafetensorError) as exc:
        raise DraftHeadError(f"{path}: not a safetensors file ({exc})") from exc


def policy_mismatch(config: DraftConfig, policy_config: Any) -> list[str]:
    """Where the head's dimensions differ from the policy's (a head made for another model)."""
    expected = DraftConfig.for_policy(policy_config, layout=config.layout, steps=config.steps)
    return [f"harness_draft.{name}: the head has {getattr(config, name)}, the policy {getattr(expected, name)}; "
            "this head was made for another model"
            for name in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                         "head_dim", "vocab_size") if getattr(config, name) != getattr(expected, name)]


def load_head(head_dir: str | Path, hf_model: Any) -> DraftHead:
    """A saved head, attached to ``hf_model``'s embeddings and LM head; every mismatch is a
    ``DraftHeadError`` naming the file and the field."""
    from safetensors.torch import load_file

    folder = Path(head_dir)
    config = read_config(folder)
    mismatch = policy_mismatch(config, hf_model.config)
    if mismatch:
        raise DraftHeadError(f"{folder / CONFIG_FILE}: " + "; ".join(mismatch))
    problems = tensor_problems(config, head_tensors(folder))
    if problems:
        raise DraftHeadError(f"{folder / WEIGHTS_FILE}: " + "; ".join(problems))
    base = DraftHead.for_policy(hf_model, layout=config.layout, steps=config.steps)
    names = tensor_names(config.layout)
    own = base.state_dict()
    state = load_file(str(folder / WEIGHTS_FILE))
    base.load_state_dict({k: state[names[k]].float() for k in own})
    base.config.rope_theta = config.rope_theta
    base.rope = RopeTable(config.head_dim, config.rope_theta)
    if config.hot_vocab_size:
        base.set_hot_tokens(read_token_map(folder, config))
    return base.eval()


def read_token_map(head_dir: str | Path, config: DraftConfig) -> torch.Tensor:
    """The draft vocabulary of a head folder (``DraftHeadError`` naming the file if it is wrong)."""
    path = Path(head_dir) / TOKEN_MAP_FILE
    if not path.is_file():
        raise DraftHeadError(f"{Path(head_dir) / CONFIG_FILE}: harness_draft.hot_vocab_size is "
                             f"{config.hot_vocab_size} but there is no {TOKEN_MAP_FILE}")
    try:
        ids = torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise DraftHeadError(f"{path}: not a saved tensor ({type(exc).__name__})") from exc
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.dtype != torch.long:
        raise DraftHeadError(f"{path}: expected a 1-D tensor of token ids (int64)")
    if ids.numel() != config.hot_vocab_size:
        raise DraftHeadError(f"{path}: {ids.numel()} token ids, harness_draft.hot_vocab_size says "
                             f"{config.hot_vocab_size}")
    return ids
