"""The engine's forward pass: a Llama-family decoder written against plain torch ops.

Why not ``model.generate``: on 2 CPU cores a 135M model's decode step is bound by
per-operator overhead (transformers' generate runs ~1,000 small ops and Python
frames per token), and generate cannot share one prompt prefix between requests
or decode several requests in one step. This module keeps only what a decode step
needs: one matmul per projection (q/k/v and gate/up fused), RoPE from a
precomputed table, KV caches the engine owns, and the LM head applied to the
last position only.

Numerics: ``quantization="none"`` keeps the checkpoint's fp32 weights and the
same operations as transformers' Llama (RMSNorm in fp32 with ``rsqrt``, RoPE
``cat(freqs, freqs)``, SDPA), so greedy outputs equal ``model.generate``'s
(``tests/engine/test_engine.py``). ``quantization="int8"`` stores every linear
layer (and the tied LM head) as weight-only int8, one scale per output channel,
with fp32 activations (``serving.engine.kernels``): a quarter of the bytes a
decode step reads; its agreement with the fp32 path is printed by
``benchmarks/local_engine.py``, not assumed. (fbgemm's dynamic int8, which also
quantizes activations, was tried first and dropped: on the demo Harness's agent
prompts its greedy outputs left the fp32 ones within the first tokens.)

Supported: ``LlamaForCausalLM`` and architectures with the same layout and no
biases (Mistral without a sliding window). Anything else raises
``UnsupportedModel`` and the caller uses transformers' own generate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from harness.draft_head_files import rope_theta_of

SUPPORTED_ARCHITECTURES = ("LlamaForCausalLM", "MistralForCausalLM")
QUANTIZATIONS = ("none", "int8")


class UnsupportedModel(ValueError):
    """The checkpoint's architecture is not one this engine implements."""


def unsupported_reason(config: Any) -> str | None:
    """Why the engine cannot run a checkpoint with this config, or None when it can."""
    archs = list(getattr(config, "architectures", None) or [])
    if not any(a in SUPPORTED_ARCHITECTURES for a in archs):
        return (
            f"architecture {archs or '(none)'} is not one of {', '.join(SUPPORTED_ARCHITECTURES)}"
        )
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        return "projection biases are not supported"
    if getattr(config, "sliding_window", None):
        return "sliding-window attention is not supported"
    if getattr(config, "hidden_act", "silu") != "silu":
        return f"activation {config.hidden_act!r} is not silu"
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None) or {}
    if (rope.get("rope_type") or rope.get("type") or "default") != "default":
        return f"RoPE scaling {rope.get('rope_type') or rope.get('type')!r} is not supported"
    return None


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' LlamaRMSNorm, operation for operation."""
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


class RopeTable:
    """cos/sin of Llama's RoPE per position, grown on demand (``cat(freqs, freqs)`` as
    transformers)."""

    def __init__(self, head_dim: int, theta: float) -> None:
        self.head_dim = head_dim
        self.inv_freq = 1.0 / (
            theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim)
        )
        self._cos = torch.empty(0, head_dim)
        self._sin = torch.empty(0, head_dim)

    def __call__(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        needed = int(positions.max()) + 1
        if needed > self._cos.shape[0]:
            size = max(needed, 2 * self._cos.shape[0], 1024)
            freqs = torch.outer(torch.arange(size, dtype=torch.float32), self.inv_freq)
            emb = torch.cat([freqs, freqs], dim=-1)
            self._cos, self._sin = emb.cos(), emb.sin()
        return self._cos[positions], self._sin[positions]


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def causal_bias(n: int, start: int) -> torch.Tensor:
    """Additive mask ``[n, start + n]``: new query i (at position start + i) sees keys 0 .. start +
    i."""
    visible = torch.ones(n, start + n, dtype=torch.bool).tril(diagonal=start)
    return torch.zeros(n, start + n).masked_fill_(~visible, float("-inf"))


def cached_attention(
    q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, bias: torch.Tensor, scale: float
) -> torch.Tensor:
    """A few new queries ``[n, heads, d]`` over a cache ``[kv_heads, length, d]`` (grouped-query):
    ``[n, heads * d]``. Plain matmuls; SDPA's CPU kernel has a fixed cost per call that dominates
    at this size."""
    n, heads, d = q.shape
    kv = keys.shape[0]
    g, end = heads // kv, keys.shape[1]
    q = q.view(n, kv, g, d).permute(1, 2, 0, 3).reshape(kv, g * n, d)
    scores = (torch.matmul(q, keys.transpose(1, 2)) * scale).view(kv, g, n, end) + bias
    attn = torch.matmul(torch.softmax(scores, dim=-1).view(kv, g * n, end), values)
    return attn.view(kv, g, n, d).permute(2, 0, 1, 3).reshape(n, heads * d)


class _Int8Linear:
    """Weight-only int8 (one fp32 scale per output channel; ``serving.engine.kernels``).

    Decode steps (at most 8 rows per pass) run the int8 kernel, reading a quarter of
    the fp32 bytes; prefill chunks are compute-bound matmuls, so they use the same
    weights dequantized to fp32 (the model is the quantized one either way).
    """

    DECODE_ROWS = 8

    def __init__(self, weight: torch.Tensor) -> None:
        from serving.engine.kernels import quantize_per_channel

        self.q, self.scale = quantize_per_channel(weight.float())
        self.dequantized = (self.q.float() * self.scale[:, None]).contiguous()
        self.out_features = weight.shape[0]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[0] <= self.DECODE_ROWS:
            from serving.engine.kernels import int8_linear

            return int8_linear(x.contiguous(), self.q, self.scale)
        return F.linear(x, self.dequantized)


class _Linear:
    def __init__(self, weight: torch.Tensor) -> None:
        self.weight = weight.contiguous()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)


@dataclass
class _Layer:
    input_norm: torch.Tensor
    post_norm: torch.Tensor
    qkv: Any
    o: Any
    gate_up: Any
    down: Any


class SequenceKV:
    """One sequence's keys and values for every layer: ``[layers, kv_heads, capacity, head_dim]``.

    Positions below ``length`` are never written again, so a prefix store may keep
    a reference to these tensors and hand copies of their first tokens to other
    sequences (``serving.engine.prefix``).
    """

    def __init__(self, model: EngineModel, capacity: int, *, extra_layers: int = 0) -> None:
        shape = (model.n_layers + extra_layers, model.n_kv_heads, capacity, model.head_dim)
        self.k = torch.empty(shape, dtype=model.kv_dtype)
        self.v = torch.empty(shape, dtype=model.kv_dtype)
        self.length = 0
        # With a draft head (``serving.engine.speculative``) the last layer holds the head's own
        # keys and values; slot p is the pair (hidden of position p, token p + 1), valid below
        # draft_length.
        self.draft_length = 0

    @property
    def capacity(self) -> int:
        return self.k.shape[2]

    @property
    def nbytes(self) -> int:
        return 2 * self.k.numel() * self.k.element_size()

    def reserve(self, length: int) -> None:
        """Room for ``length`` positions (the capacity doubles; positions kept)."""
        if length <= self.capacity:
            return
        capacity = max(length, 2 * self.capacity)
        k, v = self.k, self.v
        shape = (k.shape[0], k.shape[1], capacity, k.shape[3])
        self.k = torch.empty(shape, dtype=k.dtype)
        self.v = torch.empty(shape, dtype=v.dtype)
        self.k[:, :, : self.length] = k[:, :, : self.length]
        self.v[:, :, : self.length] = v[:, :, : self.length]

    def load_prefix(self, k: torch.Tensor, v: torch.Tensor, length: int) -> None:
        """Start from another sequence's first ``length`` positions (copied)."""
        self.reserve(length + 1)
        self.k[:, :, :length] = k[:, :, :length]
        self.v[:, :, :length] = v[:, :, :length]
        self.length = length


class EngineModel:
    """Weights of one checkpoint laid out for the engine, and its forward passes."""

    def __init__(self, hf_model: Any, *, quantization: str = "none") -> None:
        if quantization not in QUANTIZATIONS:
            raise ValueError(
                f"quantization: {quantization!r} is not one of {', '.join(QUANTIZATIONS)}"
            )
        config = hf_model.config
        reason = unsupported_reason(config)
        if reason:
            raise UnsupportedModel(reason)
        if quantization == "int8":
            from serving.engine.kernels import kernel_problem

            problem = kernel_problem()
            if problem:
                raise UnsupportedModel(f"quantization int8: {problem}")
        self.config = config
        self.quantization = quantization
        self.n_layers = config.num_hidden_layers
        self.n_heads = config.num_attention_heads
        self.n_kv_heads = config.num_key_value_heads
        self.hidden = config.hidden_size
        self.head_dim = getattr(config, "head_dim", None) or self.hidden // self.n_heads
        self.intermediate = config.intermediate_size
        self.group = self.n_heads // self.n_kv_heads
        self.scale = self.head_dim**-0.5
        self.eps = float(config.rms_norm_eps)
        self.vocab_size = config.vocab_size
        self.kv_dtype = torch.float32
        state = {k: v.detach().float() for k, v in hf_model.state_dict().items()}
        linear = _Int8Linear if quantization == "int8" else _Linear
        self.layers: list[_Layer] = []
        for i in range(self.n_layers):
            p = f"model.layers.{i}."
            qkv = torch.cat(
                [
                    state[p + "self_attn.q_proj.weight"],
                    state[p + "self_attn.k_proj.weight"],
                    state[p + "self_attn.v_proj.weight"],
                ]
            )
            gate_up = torch.cat(
                [state[p + "mlp.gate_proj.weight"], state[p + "mlp.up_proj.weight"]]
            )
            self.layers.append(
                _Layer(
                    input_norm=state[p + "input_layernorm.weight"],
                    post_norm=state[p + "post_attention_layernorm.weight"],
                    qkv=linear(qkv),
                    o=linear(state[p + "self_attn.o_proj.weight"]),
                    gate_up=linear(gate_up),
                    down=linear(state[p + "mlp.down_proj.weight"]),
                )
            )
        self.embed = state["model.embed_tokens.weight"].contiguous()
        self.final_norm = state["model.norm.weight"]
        head = (
            state.get("lm_head.weight", self.embed)
            if not config.tie_word_embeddings
            else self.embed
        )
        self.lm_head = linear(head)
        self.rope_theta = rope_theta_of(config)
        self._rope = RopeTable(self.head_dim, self.rope_theta)
        self.weight_bytes = sum(
            _nbytes(x)
            for layer in self.layers
            for x in (layer.qkv, layer.o, layer.gate_up, layer.down)
        ) + _nbytes(self.lm_head)

    # -- pieces -----------------------------------------------------------------------------
    def new_sequence(self, capacity: int = 512, *, extra_layers: int = 0) -> SequenceKV:
        return SequenceKV(self, capacity, extra_layers=extra_layers)

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, weight, self.eps)

    _rotate = staticmethod(rotate)

    def _split(self, y: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        h, kv, d = self.n_heads, self.n_kv_heads, self.head_dim
        q = y[:, : h * d].view(n, h, d)
        k = y[:, h * d : (h + kv) * d].view(n, kv, d)
        v = y[:, (h + kv) * d :].view(n, kv, d)
        return q, k, v

    def _mlp(self, layer: _Layer, x: torch.Tensor) -> torch.Tensor:
        h = self._norm(x, layer.post_norm)
        gu = layer.gate_up(h)
        return x + layer.down(F.silu(gu[:, : self.intermediate]) * gu[:, self.intermediate :])

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.lm_head(self._norm(hidden, self.final_norm))

    # -- forward passes ---------------------------------------------------------------------
    # ``states=True`` also returns the final-normalised hidden state of every new position: what
    # a draft head is fed, and what the MTP adaptation trains on (``training.mtp_trainer``).
    def prefill(
        self,
        seq: SequenceKV,
        ids: list[int] | torch.Tensor,
        *,
        chunk: int = 512,
        states: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Append ``ids`` to ``seq`` (after its cached prefix); the logits of the last position."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        hidden, normed = None, []
        for start in range(0, ids.shape[0], chunk):
            hidden = self._prefill_chunk(seq, ids[start : start + chunk])
            if states:
                normed.append(self._norm(hidden, self.final_norm))
        if not states:
            return self.logits(hidden[-1:])[0]
        normed = torch.cat(normed)
        return self.lm_head(normed[-1:])[0], normed

    def verify(
        self, seq: SequenceKV, ids: list[int] | torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append a few tokens (a draft) to ``seq``: the logits ``[n, vocab]`` and normalised hidden
        states ``[n, hidden]`` of every one. ``seq.length`` advances by n; the caller sets it back
        to what it accepts (positions past ``length`` are rewritten by the next step)."""
        ids = torch.as_tensor(ids, dtype=torch.long)
        n, start = ids.shape[0], seq.length
        seq.reserve(start + n + 1)
        cos, sin = self._rope(torch.arange(start, start + n))
        cos, sin = cos[:, None], sin[:, None]
        end = start + n
        bias = causal_bias(n, start)
        x = self.embed[ids]
        for i, layer in enumerate(self.layers):
            q, k, v = self._split(layer.qkv(self._norm(x, layer.input_norm)), n)
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            seq.k[i, :, start:end] = k.transpose(0, 1)
            seq.v[i, :, start:end] = v.transpose(0, 1)
            attn = cached_attention(q, seq.k[i, :, :end], seq.v[i, :, :end], bias, self.scale)
            x = x + layer.o(attn)
            x = self._mlp(layer, x)
        seq.length = end
        normed = self._norm(x, self.final_norm)
        return self.lm_head(normed), normed

    def _prefill_chunk(self, seq: SequenceKV, ids: torch.Tensor) -> torch.Tensor:
        n, start = ids.shape[0], seq.length
        seq.reserve(start + n + 1)
        positions = torch.arange(start, start + n)
        cos, sin = self._rope(positions)
        cos, sin = cos[:, None], sin[:, None]
        # query i sees keys 0 .. start+i
        mask = (
            None if start == 0 else torch.ones(n, start + n, dtype=torch.bool).tril(diagonal=start)
        )
        x = self.embed[ids]
        for i, layer in enumerate(self.layers):
            q, k, v = self._split(layer.qkv(self._norm(x, layer.input_norm)), n)
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            seq.k[i, :, start : start + n] = k.transpose(0, 1)
            seq.v[i, :, start : start + n] = v.transpose(0, 1)
            keys, values = seq.k[i, :, : start + n], seq.v[i, :, : start + n]
            attn = F.scaled_dot_product_attention(
                q.transpose(0, 1)[None],
                keys[None],
                values[None],
                attn_mask=mask,
                is_causal=mask is None,
                enable_gqa=True,
            )
            x = x + layer.o(attn[0].transpose(0, 1).reshape(n, -1))
            x = self._mlp(layer, x)
        seq.length = start + n
        return x

    def decode(
        self, seqs: list[SequenceKV], tokens: list[int] | torch.Tensor, *, states: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """One new token for each sequence (batched projections); logits ``[len(seqs), vocab]``."""
        b = len(seqs)
        tokens = torch.as_tensor(tokens, dtype=torch.long)
        for seq in seqs:
            seq.reserve(seq.length + 1)
        positions = torch.tensor([seq.length for seq in seqs])
        cos, sin = self._rope(positions)
        cos, sin = cos[:, None], sin[:, None]
        x = self.embed[tokens]
        for i, layer in enumerate(self.layers):
            q, k, v = self._split(layer.qkv(self._norm(x, layer.input_norm)), b)
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            # one query per sequence: plain matmuls (SDPA's CPU flash kernel costs ~0.7 ms per call
            # for a single query over 1,800 keys; these three ops cost a tenth of that)
            q = q.view(b, self.n_kv_heads, self.group, self.head_dim)
            outs = []
            for j, seq in enumerate(seqs):
                at = seq.length
                seq.k[i, :, at] = k[j]
                seq.v[i, :, at] = v[j]
                scores = torch.matmul(q[j], seq.k[i, :, : at + 1].transpose(1, 2)) * self.scale
                outs.append(torch.matmul(torch.softmax(scores, dim=-1), seq.v[i, :, : at + 1]))
            attn = outs[0][None] if b == 1 else torch.stack(outs)
            x = x + layer.o(attn.reshape(b, -1))
            x = self._mlp(layer, x)
        for seq in seqs:
            seq.length += 1
        if not states:
            return self.logits(x)
        normed = self._norm(x, self.final_norm)
        return self.lm_head(normed), normed


def _nbytes(linear: Any) -> int:
    """The bytes a decode step reads for this layer's weights."""
    if isinstance(linear, _Linear):
        return linear.weight.numel() * linear.weight.element_size()
    return linear.q.numel()  # one byte per int8 weight (scales are noise)
