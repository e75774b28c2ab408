"""MiniMax-01's lightning attention (`linear_attention` layers) and its per-sequence state.

Modules, parameters and buffers carry transformers' names (MiniMaxLightningAttention), so a
checkpoint's `self_attn.*` tensors of those layers load as they are:

    norm          RMSNorm over the heads' outputs end to end (eps 1e-6: MiniMaxRMSNorm's
                  default, which the class does not override; config.json has no key for it)
    qkv_proj      d -> 3 * n_heads * head_dim, per head [q | k | v], then the activation
    out_proj      n_heads * head_dim -> d
    output_gate   d -> n_heads * head_dim, sigmoid, multiplies the normed output
    slope_rate, query_decay, key_decay, diagonal_decay
                  buffers derived from the head and the layer's depth (spec/lightning.py),
                  persistent as transformers' are (its checkpoints carry them): no parameters

Per head, S = exp(-s) S + k^T v and o = q S. A prompt runs in blocks of block_size tokens, as
transformers' torch path does: inside a block the decayed q k^T square, across blocks the state.
One token is one step of the recurrence (two small matmuls, no block machinery).

The state per sequence is one head_dim x head_dim matrix per head, in the activations' dtype
(transformers makes it in v's dtype and MiniMaxCache keeps it so).
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.nn.ffn import ACTIVATIONS
from archscope.nn.linear import Linear
from archscope.nn.norms import RMSNorm
from archscope.spec.lightning import LightningSpec

NORM_EPS = 1e-6  # MiniMaxRMSNorm's default: the lightning layer's norm is built without eps


class LightningState:
    """One layer's state for `batch` sequences, allocated once: recurrent [B, H, d_h, d_h]."""

    def __init__(self, g: LightningSpec, batch: int, device, dtype: torch.dtype):
        self.recurrent = torch.zeros(batch, g.n_heads, g.head_dim, g.head_dim, device=device,
                                     dtype=dtype)

    def nbytes(self) -> int:
        return self.recurrent.numel() * self.recurrent.element_size()

    def reset(self) -> None:
        self.recurrent.zero_()


def slope_rate(n_heads: int, layer: int, n_layers: int, device=None) -> torch.Tensor:
    """[H, 1, 1] decay rates in fp32, in transformers' order of operations (get_slope_rate),
    so the buffers equal its own bit for bit."""
    base = 1 / (2 ** (8 / n_heads))
    powers = base ** (torch.arange(n_heads, device=device) + 1)
    return (powers * (1 - layer / (n_layers - 1 + 1e-5) + 1e-5))[:, None, None]


def decays(rate: torch.Tensor, block: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(query [H, B, 1], key [H, B, 1], diagonal [1, H, B, B]) decays of one block: a query at
    position j of its block reads the state decayed j + 1 times, a key at j enters it decayed
    B - 1 - j times, a key at j reaches a query at i >= j decayed i - j times (0 above)."""
    steps = torch.arange(block, device=rate.device) + 1
    query = torch.exp(-rate * steps[:, None])
    key = torch.exp(-rate * (block - steps[:, None]))
    gap = rate * (steps[:, None] - steps[None, :])[None, None]
    diagonal = torch.exp(torch.where(gap >= 0, -gap, float("-inf")))
    return query, key, diagonal


class LightningAttention(nn.Module):
    """The mixer of layer `layer` of `n_layers` (its decays depend on the depth)."""

    def __init__(self, d_model: int, g: LightningSpec, layer: int, n_layers: int):
        super().__init__()
        self.g, self.layer, self.n_layers = g, layer, n_layers
        self.act = ACTIVATIONS[g.activation]
        self.norm = RMSNorm(g.width, NORM_EPS)
        self.qkv_proj = Linear(d_model, 3 * g.width, bias=False)
        self.out_proj = Linear(g.width, d_model, bias=False)
        self.output_gate = Linear(d_model, g.width, bias=False)
        rate = slope_rate(g.n_heads, layer, n_layers)
        query, key, diagonal = decays(rate, g.block_size)
        for name, value in (("slope_rate", rate), ("query_decay", query), ("key_decay", key),
                            ("diagonal_decay", diagonal)):
            self.register_buffer(name, value)

    @torch.no_grad()
    def init_own_weights(self) -> None:
        """The decay buffers, computed again where the model now lives (in fp32, then cast to
        the buffers' dtype, as transformers' model.to(dtype) casts its own)."""
        rate = slope_rate(self.g.n_heads, self.layer, self.n_layers, self.slope_rate.device)
        for buffer, value in zip((self.slope_rate, self.query_decay, self.key_decay,
                                  self.diagonal_decay), (rate, *decays(rate, self.g.block_size))):
            buffer.copy_(value)

    def new_cache(self, batch: int, max_len: int, device, dtype) -> LightningState:
        """The state for `batch` sequences; `max_len` does not change its size."""
        return LightningState(self.g, batch, device, dtype)

    def step(self, q, k, v, state):
        """One token: S = exp(-s) S + k^T v, o = q S ([B, H, 1, d_h] each)."""
        state = torch.exp(-self.slope_rate) * state + torch.matmul(k.transpose(-1, -2), v)
        return torch.matmul(q, state), state

    def blocked(self, q, k, v, state):
        """A run of tokens from `state`, block by block ([B, H, T, d_h] each)."""
        outs, block = [], self.g.block_size
        for start in range(0, q.shape[2], block):
            qb, kb, vb = (t[:, :, start:start + block] for t in (q, k, v))
            c = qb.shape[2]
            scores = torch.matmul(qb, kb.transpose(-1, -2)) * self.diagonal_decay[:, :, :c, :c]
            inter = torch.matmul(qb * self.query_decay[:, :c], state)
            outs.append(inter + torch.matmul(scores, vb))
            written = torch.matmul((kb * self.key_decay[:, -c:]).transpose(-1, -2), vb)
            state = state * torch.exp(-self.slope_rate * c) + written
        return torch.cat(outs, dim=2), state

    def forward(self, x: torch.Tensor, rope=None, start: int = 0,
                cache: LightningState | None = None) -> torch.Tensor:
        """x [B, T, d] -> [B, T, d]. `rope` and `start` are unused (the state carries the
        order); they keep the attention mixers' signature."""
        g, (batch, tokens, _) = self.g, x.shape
        qkv = self.act(self.qkv_proj(x)).view(batch, tokens, g.n_heads, 3 * g.head_dim)
        q, k, v = (t.transpose(1, 2) for t in qkv.split(g.head_dim, dim=-1))
        state = cache.recurrent if cache is not None else \
            v.new_zeros(batch, g.n_heads, g.head_dim, g.head_dim)
        out, state = (self.step if tokens == 1 else self.blocked)(q, k, v, state)
        if cache is not None:
            cache.recurrent.copy_(state)
        out = self.norm(out.transpose(1, 2).reshape(batch, tokens, g.width))
        return self.out_proj(torch.sigmoid(self.output_gate(x)) * out)


def lightning(spec, mixer: LightningSpec, layer: int) -> LightningAttention:
    """The factory the kinds registry names: (model spec, mixer spec, layer index) -> module."""
    return LightningAttention(spec.d_model, mixer, layer, spec.n_layers)
