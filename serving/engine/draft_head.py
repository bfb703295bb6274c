"""The MTP draft head: one decoder block that guesses the policy's next tokens (docs/architecture.md
§9).

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
parameters) and run by the engine (``serving.engine.speculative``, under
inference mode, with the attention over the sequence's cache done by the caller):
``fuse`` -> ``project`` -> attention -> ``finish`` -> ``logits``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from harness.draft_head_files import (
    CARD_FILE,
    CONFIG_FILE,
    DEFAULT_STEPS,
    LAYOUTS,
    TOKEN_MAP_FILE,
    WEIGHTS_FILE,
    DraftConfig,
    DraftHeadError,
    expected_shapes,
    head_tensors,
    layout_of_names,
    policy_mismatch,
    read_card,
    read_config,
    sglang_config,
    tensor_names,
    tensor_problems,
)
from serving.engine.model import RopeTable, rms_norm, rotate

# the folder's format lives in harness.draft_head_files (no torch); its names stay importable from
# here
__all__ = [
    "DraftHead",
    "load_head",
    "read_token_map",
    "CARD_FILE",
    "CONFIG_FILE",
    "DEFAULT_STEPS",
    "LAYOUTS",
    "TOKEN_MAP_FILE",
    "WEIGHTS_FILE",
    "DraftConfig",
    "DraftHeadError",
    "expected_shapes",
    "head_tensors",
    "layout_of_names",
    "policy_mismatch",
    "read_card",
    "read_config",
    "sglang_config",
    "tensor_names",
    "tensor_problems",
]


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
        self.scale = d**-0.5
        # the draft vocabulary (token ids), None: the whole vocabulary
        self.hot: torch.Tensor | None = None
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
            raise DraftHeadError(
                f"{TOKEN_MAP_FILE}: token ids must be in 0..{self.config.vocab_size - 1}"
            )
        if ids.unique().numel() != ids.numel():
            raise DraftHeadError(f"{TOKEN_MAP_FILE}: token ids repeat")
        self.hot = ids
        self._hot_head = self.lm_head[ids].contiguous()
        self.config.hot_vocab_size = int(ids.numel())

    @classmethod
    def for_policy(
        cls, hf_model: Any, *, layout: str = "eagle", steps: int = DEFAULT_STEPS
    ) -> DraftHead:
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
            for linear in (
                draft.q_proj,
                draft.k_proj,
                draft.v_proj,
                draft.gate_proj,
                draft.up_proj,
            ):
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

    def project(
        self, x: torch.Tensor, positions: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q ``[n, heads, d]``, k and v ``[n, kv_heads, d]`` (RoPE applied) for the block's
        attention."""
        n, c = x.shape[0], self.config
        a = self._norm(x, self.input_layernorm) if self.nextn else x
        cos, sin = self.rope(positions)
        cos, sin = cos[:, None], sin[:, None]
        q = rotate(self.q_proj(a).view(n, c.num_attention_heads, c.head_dim), cos, sin)
        k = rotate(self.k_proj(a).view(n, c.num_key_value_heads, c.head_dim), cos, sin)
        v = self.v_proj(a).view(n, c.num_key_value_heads, c.head_dim)
        return q, k, v

    def finish(self, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """The block's output (the next step's hidden state) from its input and attention ``[n,
        heads*d]``."""
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
    def save(
        self, out_dir: str | Path, *, policy_config: Any, card: dict[str, Any] | None = None
    ) -> Path:
        """Write the head as SGLang loads it for its layout (``config.json`` +
        ``model.safetensors``, tensor names from ``tensor_names``), plus ``card.json``. The policy's
        embeddings and LM head are not written: SGLang's EAGLE worker and this engine take them from
        the policy."""
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
        (out / CONFIG_FILE).write_text(
            json.dumps(sglang_config(policy_config, self.config), indent=2) + "\n", encoding="utf-8"
        )
        if card is not None:
            (out / CARD_FILE).write_text(
                json.dumps(card, indent=2, sort_keys=True) + "\n", encoding="utf-8"
            )
        return out


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
        raise DraftHeadError(
            f"{Path(head_dir) / CONFIG_FILE}: harness_draft.hot_vocab_size is "
            f"{config.hot_vocab_size} but there is no {TOKEN_MAP_FILE}"
        )
    try:
        ids = torch.load(path, weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise DraftHeadError(f"{path}: not a saved tensor ({type(exc).__name__})") from exc
    if not isinstance(ids, torch.Tensor) or ids.dim() != 1 or ids.dtype != torch.long:
        raise DraftHeadError(f"{path}: expected a 1-D tensor of token ids (int64)")
    if ids.numel() != config.hot_vocab_size:
        raise DraftHeadError(
            f"{path}: {ids.numel()} token ids, harness_draft.hot_vocab_size says "
            f"{config.hot_vocab_size}"
        )
    return ids
