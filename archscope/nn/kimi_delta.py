"""Kimi Linear's Kimi Delta Attention mixer (KDA, `linear_attention` layers) and its state.

Modules and parameters carry transformers' names (KimiLinearDeltaAttention), so its
`self_attn.*` tensors load as they are:

    q_proj, k_proj, v_proj   d -> n_heads*head_dim each
    conv1d        depthwise causal conv over [q | k | v] (conv_dim channels, no bias), then silu
    forget_gate   f_a_proj d -> head_dim, f_b_proj head_dim -> qkv_dim, dt_bias per channel,
                  A_log per head ([1, 1, H, 1]): g = -exp(A_log) * softplus(f + dt_bias), one
                  decay per head and key channel
    b_proj        d -> n_heads: beta = sigmoid(b)
    g_a_proj, g_b_proj   d -> head_dim -> qkv_dim: the output gate (gates full_rank, Ling's
                  BailingHybridDeltaAttention: f_proj and g_proj d -> qkv_dim instead, A_log
                  held [H], and with gate_lower_bound a bounded decay)
    o_norm        RMSNorm over each head's output (in fp32, weight included) times
                  sigmoid(gate), one weight of head_dim shared by the heads
    o_proj        qkv_dim -> d

The state per sequence is the Gated DeltaNet's (nn/delta_rule.DeltaRuleState): the conv's
last conv_kernel inputs in the activations' dtype, and one head_dim x head_dim matrix per head
in fp32 (transformers casts the state to fp32 before caching it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.delta_rule import DeltaRuleState, advance, l2_normalize
from archscope.nn.depthwise import causal_depthwise_conv
from archscope.nn.linear import Linear
from archscope.spec.kimi_delta import KimiDeltaSpec

class SigmoidGatedRMSNorm(nn.Module):
    """weight * rmsnorm(x) * sigmoid(gate), all in fp32, then cast back (transformers'
    KimiLinearRMSNormGated: the weight applied before the cast, unlike Qwen3-Next's)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return (self.weight.float() * x * gate.float().sigmoid()).to(dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


class KimiDeltaForgetGate(nn.Module):
    """The per-channel decay g [B, T, H, head_dim] (fp32, <= 0): from a low-rank projection
    f_a_proj -> f_b_proj and -exp(A_log) * softplus(f + dt_bias) (Kimi's), or from a full-rank
    f_proj (Ling's, A_log held [H]) and, with gate_lower_bound b, b * sigmoid(exp(A_log) *
    (f + dt_bias))."""

    def __init__(self, d_model: int, m: KimiDeltaSpec):
        super().__init__()
        self.head_dim, self.lower_bound = m.head_dim, m.gate_lower_bound
        if m.gates == "low_rank":  # registered as transformers' classes register them
            self.f_a_proj = Linear(d_model, m.head_dim, bias=False)
            self.f_b_proj = Linear(m.head_dim, m.qkv_dim, bias=False)
            self.dt_bias = nn.Parameter(torch.zeros(m.qkv_dim))
            self.A_log = nn.Parameter(torch.zeros(1, 1, m.n_heads, 1))
        else:
            self.A_log = nn.Parameter(torch.zeros(m.n_heads))
            self.dt_bias = nn.Parameter(torch.zeros(m.qkv_dim))
            self.f_proj = Linear(d_model, m.qkv_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        f = (self.f_b_proj(self.f_a_proj(x)) if hasattr(self, "f_a_proj")
             else self.f_proj(x)).float() + self.dt_bias.float()
        f = f.view(*x.shape[:2], -1, self.head_dim)
        rate = self.A_log.float().exp().view(1, 1, -1, 1)
        if self.lower_bound is not None:
            g = self.lower_bound * torch.sigmoid(rate * f)
        else:  # softplus, linear past 20 as transformers' (and FLA's) threshold
            g = -rate * F.softplus(f, threshold=20.0)
        # Ling's gate hands the decay on in the activations' dtype (rounded in bf16); Kimi's
        # in fp32
        return g if hasattr(self, "f_a_proj") else g.to(x.dtype)


class KimiDeltaAttention(nn.Module):
    """The mixer for one layer; `eps` is the model's RMSNorm eps (config.json's rms_norm_eps,
    which transformers also gives o_norm)."""

    def __init__(self, d_model: int, m: KimiDeltaSpec, eps: float):
        super().__init__()
        self.m = m
        self.q_proj = Linear(d_model, m.qkv_dim, bias=False)
        self.k_proj = Linear(d_model, m.qkv_dim, bias=False)
        self.v_proj = Linear(d_model, m.qkv_dim, bias=False)
        # holds the weight [conv_dim, 1, K] under transformers' name; forward pads from the state
        self.conv1d = nn.Conv1d(m.conv_dim, m.conv_dim, m.conv_kernel, groups=m.conv_dim,
                                bias=False)
        self.forget_gate = KimiDeltaForgetGate(d_model, m)
        self.b_proj = Linear(d_model, m.n_heads, bias=False)
        if m.gates == "low_rank":
            self.g_a_proj = Linear(d_model, m.head_dim, bias=False)
            self.g_b_proj = Linear(m.head_dim, m.qkv_dim, bias=False)
        self.o_norm = SigmoidGatedRMSNorm(m.head_dim, eps)
        self.o_proj = Linear(m.qkv_dim, d_model, bias=False)
        if m.gates == "full_rank":  # Ling's g_proj, registered last as in its class
            self.g_proj = Linear(d_model, m.qkv_dim, bias=False)

    @torch.no_grad()
    def init_own_weights(self) -> None:
        """Deterministic decays: A = 1 .. 16 over the heads (transformers draws A from that
        range), dt_bias = 0 (softplus(0) = log 2 per channel, before the projection's part)."""
        gate = self.forget_gate
        gate.A_log.copy_(torch.log(torch.linspace(1, 16, self.m.n_heads)).view(gate.A_log.shape))
        gate.dt_bias.zero_()

    def new_cache(self, batch: int, max_len: int, device, dtype) -> DeltaRuleState:
        """The state for `batch` sequences; `max_len` does not change its size."""
        m = self.m
        return DeltaRuleState(batch, (m.conv_dim, m.conv_kernel),
                              (m.n_heads, m.head_dim, m.head_dim), device, dtype)

    def delta_rule(self, q, k, v, g, beta, state: DeltaRuleState | None):
        """q, k, v [B, T, H, h], g [B, T, H, h], beta [B, T, H] -> [B, T, H, h] in fp32."""
        m = self.m
        q, k = (l2_normalize(t.float()) for t in (q, k))
        q = q * m.head_dim ** -0.5
        q, k, v, g = (t.float().transpose(1, 2) for t in (q, k, v, g))
        beta = beta.float().transpose(1, 2)
        return advance(q, k, v, g, beta, state, m.chunk_size).transpose(1, 2)

    def forward(self, x: torch.Tensor, rope=None, start: int = 0,
                cache: DeltaRuleState | None = None) -> torch.Tensor:
        """x [B, T, d] -> [B, T, d]. `rope` and `start` are unused (the state carries the
        order); they keep the attention mixers' signature."""
        m, (batch, tokens, _) = self.m, x.shape
        qkv = torch.cat((self.q_proj(x), self.k_proj(x), self.v_proj(x)), dim=-1)
        qkv = causal_depthwise_conv(qkv.transpose(1, 2), self.conv1d,
                                    None if cache is None else cache.conv)
        qkv = F.silu(qkv).to(x.dtype).transpose(1, 2)
        q, k, v = (t.reshape(batch, tokens, m.n_heads, m.head_dim)
                   for t in qkv.split([m.qkv_dim] * 3, dim=-1))
        g = self.forget_gate(x)
        beta = self.b_proj(x).sigmoid()
        out = self.delta_rule(q, k, v, g, beta, cache).to(x.dtype)
        gate = (self.g_b_proj(self.g_a_proj(x)) if m.gates == "low_rank" else self.g_proj(x))
        gate = gate.view(batch, tokens, m.n_heads, m.head_dim)
        return self.o_proj(self.o_norm(out, gate).reshape(batch, tokens, -1))


def kimi_delta(spec, mixer: KimiDeltaSpec) -> KimiDeltaAttention:
    """The factory the kinds registry names: (model spec, mixer spec) -> module."""
    return KimiDeltaAttention(spec.d_model, mixer, spec.norm.eps)
