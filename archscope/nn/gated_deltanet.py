"""Qwen3-Next's Gated DeltaNet mixer (`linear_attention` layers) and its per-sequence state.

Modules and parameters carry transformers' names (Qwen3NextGatedDeltaNet), so a checkpoint's
`linear_attn.*` tensors load as they are:

    in_proj_qkvz  d -> 2*key_dim + 2*value_dim, rows grouped by key head: for each key head,
                  its q (key_head_dim), its k (key_head_dim), then v and z of the
                  heads_per_key value heads it serves (heads_per_key*value_head_dim each)
    in_proj_ba    d -> 2*n_value_heads, grouped the same way: per key head, b then a of its
                  value heads
    (projections "split", Qwen3_5GatedDeltaNet: in_proj_qkv d -> [q | k | v], in_proj_z,
    in_proj_b and in_proj_a, each head after head; the same arithmetic after the split)
    conv1d        depthwise causal conv over [q | k | v] (conv_dim channels, no bias), then silu
    dt_bias, A_log  per value head: decay g = -exp(A_log) * softplus(a + dt_bias)
    norm          RMSNorm over each value head's output, gated by silu(z) (one weight of
                  value_head_dim shared by the heads)
    out_proj      value_dim -> d

The state per sequence is constant in the context length: the conv's last conv_kernel inputs
(all its columns, as transformers' cache keeps them, in the activations' dtype) and one
key_head_dim x value_head_dim matrix per value head in fp32 (transformers' torch path makes it
fp32 whatever the model's dtype, and its cache keeps that).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.delta_rule import DeltaRuleState, advance, l2_normalize
from archscope.nn.depthwise import causal_depthwise_conv
from archscope.nn.linear import Linear
from archscope.spec.gated_deltanet import GatedDeltaNetSpec

class GatedRMSNorm(nn.Module):
    """weight * rmsnorm(x) * silu(gate): the norm in fp32, cast back before the weight, the
    gate in fp32 (transformers' Qwen3NextRMSNormGated, whose rounding in bf16 this keeps)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight * x.to(dtype) * F.silu(gate.float())).to(dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


class GatedDeltaNet(nn.Module):
    """The mixer for one layer; `eps` is the model's RMSNorm eps (config.json's rms_norm_eps,
    which transformers also gives the gated norm)."""

    def __init__(self, d_model: int, gdn: GatedDeltaNetSpec, eps: float):
        super().__init__()
        self.gdn = gdn
        if gdn.projections == "split":
            self.in_proj_qkv = Linear(d_model, gdn.conv_dim, bias=False)
            self.in_proj_z = Linear(d_model, gdn.value_dim, bias=False)
            self.in_proj_b = Linear(d_model, gdn.n_value_heads, bias=False)
            self.in_proj_a = Linear(d_model, gdn.n_value_heads, bias=False)
        else:
            self.in_proj_qkvz = Linear(d_model, gdn.qkvz_width, bias=False)
            self.in_proj_ba = Linear(d_model, gdn.ba_width, bias=False)
        # the module only holds the weight [conv_dim, 1, conv_kernel] under transformers' name;
        # forward pads causally itself from the state, so the conv has no padding of its own
        self.conv1d = nn.Conv1d(gdn.conv_dim, gdn.conv_dim, gdn.conv_kernel,
                                groups=gdn.conv_dim, bias=False)
        # per value head; real values come from the checkpoint or the builder's init
        self.dt_bias = nn.Parameter(torch.ones(gdn.n_value_heads))
        self.A_log = nn.Parameter(torch.zeros(gdn.n_value_heads))
        self.norm = GatedRMSNorm(gdn.value_head_dim, eps)
        self.out_proj = Linear(gdn.value_dim, d_model, bias=False)

    @torch.no_grad()
    def init_own_weights(self) -> None:
        """Deterministic decays and steps: A = 1 .. 16 spread over the heads (inside the
        0.01 .. 16 range transformers' Qwen3-Next init draws from), dt_bias = 1."""
        self.A_log.copy_(torch.log(torch.linspace(1, 16, self.gdn.n_value_heads)))
        self.dt_bias.fill_(1.0)

    def new_cache(self, batch: int, max_len: int, device, dtype) -> DeltaRuleState:
        """The state for `batch` sequences; `max_len` does not change its size."""
        g = self.gdn
        return DeltaRuleState(batch, (g.conv_dim, g.conv_kernel),
                              (g.n_value_heads, g.key_head_dim, g.value_head_dim), device, dtype)

    def project(self, x: torch.Tensor):
        """q, k [B, T, key_dim], v [B, T, value_dim], z [B, T, H_v, d_v], b and a [B, T, H_v]:
        the fused projections split per key head, then value heads laid end to end."""
        s, (batch, tokens, _) = self.gdn, x.shape
        if s.projections == "split":  # already head after head
            q, k, v = self.in_proj_qkv(x).split([s.key_dim, s.key_dim, s.value_dim], dim=-1)
            z = self.in_proj_z(x).view(batch, tokens, s.n_value_heads, -1)
            return q, k, v, z, self.in_proj_b(x), self.in_proj_a(x)
        dk, per_key = s.key_head_dim, s.heads_per_key * s.value_head_dim
        qkvz = self.in_proj_qkvz(x).view(batch, tokens, s.n_key_heads, -1)
        q, k, v, z = qkvz.split([dk, dk, per_key, per_key], dim=-1)
        b, a = self.in_proj_ba(x).view(batch, tokens, s.n_key_heads, -1).split(
            [s.heads_per_key, s.heads_per_key], dim=-1)
        flat = [t.reshape(batch, tokens, -1) for t in (q, k, v, b, a)]
        return (*flat[:3], z.reshape(batch, tokens, s.n_value_heads, -1), *flat[3:])

    def convolve(self, qkv: torch.Tensor, state: DeltaRuleState | None) -> torch.Tensor:
        """Causal depthwise conv of [B, conv_dim, T] with silu: each output reads its input and
        the conv_kernel - 1 before it (zeros before the first token, else the state's)."""
        out = causal_depthwise_conv(qkv, self.conv1d, None if state is None else state.conv)
        return F.silu(out)

    def delta_rule(self, q, k, v, g, beta, state: DeltaRuleState | None):
        """[B, T, ...] inputs -> [B, T, H_v, d_v] outputs in fp32, updating the state."""
        s = self.gdn
        batch, tokens = q.shape[:2]
        q, k = (l2_normalize(t.float().reshape(batch, tokens, s.n_key_heads, -1)) for t in (q, k))
        q = q * s.key_head_dim ** -0.5
        # value head h reads key head h // heads_per_key (the projections' grouping)
        q, k = (t.repeat_interleave(s.heads_per_key, dim=2).transpose(1, 2) for t in (q, k))
        v = v.float().reshape(batch, tokens, s.n_value_heads, -1).transpose(1, 2)
        g, beta = (t.float().transpose(1, 2) for t in (g, beta))
        return advance(q, k, v, g, beta, state, s.chunk_size).transpose(1, 2)

    def forward(self, x: torch.Tensor, rope=None, start: int = 0,
                cache: DeltaRuleState | None = None) -> torch.Tensor:
        """x [B, T, d] -> [B, T, d]. `rope` and `start` are unused (the state carries the
        order); they keep the attention mixers' signature so the block calls any mixer alike."""
        s = self.gdn
        q, k, v, z, b, a = self.project(x)
        qkv = self.convolve(torch.cat((q, k, v), dim=-1).transpose(1, 2), cache).transpose(1, 2)
        q, k, v = qkv.split([s.key_dim, s.key_dim, s.value_dim], dim=-1)
        beta = b.sigmoid()
        # in fp32: in fp16 exp(A_log) could overflow to inf
        g = -self.A_log.float().exp() * F.softplus(a.float() + self.dt_bias)
        out = self.delta_rule(q, k, v, g, beta, cache).to(x.dtype)
        out = self.norm(out, z)
        return self.out_proj(out.reshape(*x.shape[:2], -1))


def gated_deltanet(spec, mixer: GatedDeltaNetSpec) -> GatedDeltaNet:
    """The factory the kinds registry names: (model spec, mixer spec) -> module; the gated
    norm takes the model's norm eps, as transformers' Qwen3-Next does."""
    return GatedDeltaNet(spec.d_model, mixer, spec.norm.eps)
