"""Qwen3-Next's gated full attention (its `full_attention` layers): GQA whose q_proj is twice
as wide, the second half of each head a gate on that head's output, sigmoid(gate) * output,
before o_proj; per-head QK-norm with (1 + weight) norms; RoPE on the first rotary_dim of each
head only (partial rotary: Qwen3-Next rotates 64 of 256).

Names and layouts as transformers' Qwen3NextAttention, so checkpoints load as they are:

    q_proj  d -> n_heads * 2*head_dim, rows per head: that head's query (head_dim rows), then
            its gate (head_dim rows)
    k_proj, v_proj  d -> n_kv_heads * head_dim;  o_proj  n_heads*head_dim -> d
    q_norm, k_norm  RMSNorm(head_dim, unit_offset), on q and k before RoPE

The cache is GQA's (2 * n_kv_heads * head_dim per token): the gate is computed from the
current token only and never cached.
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.nn.attention import attend
from archscope.nn.cache import LayerCache
from archscope.nn.norms import RMSNorm
from archscope.nn.rope import apply_rope


class GatedAttention(nn.Module):
    """`rotary_dim`: dims of each head RoPE turns, the first ones (head_dim *
    partial_rotary_factor); `eps`: the model's rms_norm_eps."""

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int, head_dim: int,
                 rotary_dim: int, eps: float, bias: bool = False):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, head_dim
        self.rotary_dim = rotary_dim
        self.q_proj = nn.Linear(d_model, n_heads * head_dim * 2, bias=bias)
        self.k_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, n_kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(n_heads * head_dim, d_model, bias=bias)
        self.q_norm = RMSNorm(head_dim, eps, unit_offset=True)
        self.k_norm = RMSNorm(head_dim, eps, unit_offset=True)
        self.scale = head_dim ** -0.5

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        """RoPE on the first rotary_dim dims of each head; the rest pass unrotated."""
        turned, kept = x.split([self.rotary_dim, self.head_dim - self.rotary_dim], dim=-1)
        return torch.cat((apply_rope(turned, cos, sin), kept), dim=-1)

    def forward(self, x: torch.Tensor, rope, start: int, cache: LayerCache | None):
        """x [B, T, d]; rope: (cos, sin) [T, rotary_dim] for the T positions from `start`."""
        b, t, _ = x.shape
        query, gate = self.q_proj(x).view(b, t, self.n_heads, 2 * self.head_dim).chunk(2, dim=-1)
        q = self.q_norm(query).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, self.n_kv_heads, -1)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv_heads, -1).transpose(1, 2)
        cos, sin = rope
        q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
        key_pos = None
        if cache is not None:
            kv, key_pos = cache.append({"k": k, "v": v}, start)
            k, v = kv["k"], kv["v"]
        out = attend(q, k, v, start=start, key_pos=key_pos, window=None, scale=self.scale,
                     gqa=self.n_kv_heads != self.n_heads)
        out = out.transpose(1, 2).reshape(b, t, -1) * torch.sigmoid(gate.reshape(b, t, -1))
        return self.o_proj(out)

    def new_cache(self, batch: int, max_len: int, device, dtype) -> LayerCache:
        shape = (batch, self.n_kv_heads, self.head_dim)
        return LayerCache({"k": shape, "v": shape}, seq_dim=2, capacity=max_len,
                          device=device, dtype=dtype)
