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
final norm before the shared head). Both train and run here; how each is written
for SGLang is ``harness.engine.draft_export``.

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
CONFIG_FILE = "draft_config.json"
WEIGHTS_FILE = "draft.safetensors"
CARD_FILE = "card.json"


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

    @classmethod
    def for_policy(cls, hf_model: Any, *, layout: str = "eagle", steps: int = DEFAULT_STEPS,
                   init_from_last_layer: bool = True) -> DraftHead:
        """A new head for a policy: its block starts as a copy of the policy's last decoder layer
        (a better start than random: it already maps this policy's hidden states), ``fc`` passes
        the hidden state through and adds a little of the token embedding."""
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
            if init_from_last_layer:
                last = hf_model.model.layers[-1]
                for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
                    getattr(draft, name).weight.copy_(getattr(last.self_attn, name).weight.float())
                for name in ("gate_proj", "up_proj", "down_proj"):
                    getattr(draft, name).weight.copy_(getattr(last.mlp, name).weight.float())
                draft.post_attention_layernorm.copy_(last.post_attention_layernorm.weight.float())
                if draft.nextn:
                    draft.input_layernorm.copy_(last.input_layernorm.weight.float())
                    draft.norm.copy_(hf_model.model.norm.weight.float())
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
        if self.nextn:
            out = self._norm(out, self.norm)
        return F.linear(out, self.lm_head)

    # -- files ------------------------------------------------------------------------------
    def save(self, out_dir: str | Path, *, card: dict[str, Any] | None = None) -> Path:
        """The head's own format (what this project loads back); SGLang's is ``draft_export``."""
        from safetensors.torch import save_file

        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().contiguous() for k, v in self.state_dict().items()}, str(out / WEIGHTS_FILE))
        (out / CONFIG_FILE).write_text(json.dumps(self.config.to_dict(), indent=2) + "\n", encoding="utf-8")
        if card is not None:
            (out / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return out


def read_card(head_dir: str | Path) -> dict[str, Any]:
    path = Path(head_dir) / CARD_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DraftHeadError(f"{path}: not readable JSON ({exc})") from exc


def load_head(head_dir: str | Path, hf_model: Any) -> DraftHead:
    """A saved head, attached to ``hf_model``'s embeddings and LM head; every mismatch is a
    ``DraftHeadError`` naming the file and the field."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(head_dir)
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        raise DraftHeadError(f"{folder}: no {CONFIG_FILE}; not a draft head saved by this project "
                             "(python -m training mtp writes one)")
    try:
        raw = json.loads(config_path.read_text(encoding="utf-8"))
        config = DraftConfig(**raw)
    except (ValueError, TypeError) as exc:
        raise DraftHeadError(f"{config_path}: {exc}") from exc
    if config.layout not in LAYOUTS:
        raise DraftHeadError(f"{config_path}: layout: {config.layout!r} is not one of {', '.join(LAYOUTS)}")
    expected = DraftConfig.for_policy(hf_model.config, layout=config.layout, steps=config.steps)
    for name in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                 "head_dim", "vocab_size"):
        if getattr(config, name) != getattr(expected, name):
            raise DraftHeadError(f"{config_path}: {name}: the head has {getattr(config, name)}, the policy "
                                 f"{getattr(expected, name)}; this head was made for another model")
    base = DraftHead.for_policy(hf_model, layout=config.layout, steps=config.steps, init_from_last_layer=False)
    try:
        state = load_file(str(folder / WEIGHTS_FILE))
    except (OSError, SafetensorError) as exc:
        raise DraftHeadError(f"{folder / WEIGHTS_FILE}: {exc}") from exc
    own = base.state_dict()
    missing, extra = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or extra:
        raise DraftHeadError(f"{folder / WEIGHTS_FILE}: tensors missing {missing}, unexpected {extra}")
    for name, tensor in state.items():
        if tuple(tensor.shape) != tuple(own[name].shape):
            raise DraftHeadError(f"{folder / WEIGHTS_FILE}: {name}: shape {tuple(tensor.shape)}, expected "
                                 f"{tuple(own[name].shape)}")
    base.load_state_dict({k: v.float() for k, v in state.items()})
    base.config.rope_theta = config.rope_theta
    return base.eval()
