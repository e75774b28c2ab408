"""The Mamba-1 (selective scan) state mixer of Mamba, Falcon-Mamba and Jamba, in plain torch.

    in_proj: d_model -> x (d_inner) | z (d_inner)
    x = silu(causal depthwise conv1d(x))
    dt_r | B | C = x_proj(x)            (dt_rank, d_state, d_state); Falcon-Mamba and Jamba
                                        RMS-normalise each of the three (Jamba with weights)
    dt = softplus(dt_proj(dt_r));  A = -exp(A_log)        (A: d_inner x d_state)
    h_t = exp(dt_t A) h_{t-1} + dt_t B_t x_t;  y_t = h_t C_t + D x_t   (per channel: N states)
    out_proj(y * silu(z))

A prompt runs the recurrence token by token, as transformers' torch path does (Mamba-1's decay
is per channel and state column, so there is no cheap chunked matrix form); the readouts of a
block of tokens are one einsum. One cached token runs the same step. No fused kernels: this is
the reference path, and its matmuls are the ones `archscope/kinds/mamba1.py` counts. Module and
parameter names are transformers' own (conv1d, in_proj, x_proj, dt_proj, A_log, D, out_proj,
dt/b/c_layernorm), so checkpoints load by name.

With n_heads > 1 (Zamba's multi-head mixer) the d_inner channels are n_heads heads, each with
its own x_proj [n_heads, R + 2N, head_dim] and dt_proj [n_heads, head_dim, R] (+ bias
[n_heads, head_dim]); A_log [n_heads, head_dim, N] and D [n_heads, head_dim] in the same
layout, as ZambaMambaMixer holds them. B and C are then per head.

Numerics follow transformers' torch path: dt and its softplus in the activations' dtype, the
discretisation and the state in fp32, the conv state in the activations' dtype. One deliberate
difference: the readout h C is taken in fp32, where transformers first rounds h to the
activations' dtype; in fp32 the two are the same.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.depthwise import causal_depthwise_conv
from archscope.nn.linear import Linear
from archscope.nn.norms import RMSNorm
from archscope.spec.mamba1 import MambaSpec

SCAN_BLOCK = 64  # tokens whose states are held at once in a prompt (their readout: one einsum)


class MambaState:
    """One layer's per-sequence state: constant in size whatever the context.

    conv: [batch, d_inner, conv_kernel], the last conv_kernel inputs of the conv (transformers
    keeps all kernel columns, though the next step reads only the newest conv_kernel - 1), in
    the activations' dtype. ssm: [batch, d_inner, d_state], fp32 as transformers keeps it
    whatever the model's dtype. `started` is false until a first forward fills them.
    """

    def __init__(self, conv: torch.Tensor, ssm: torch.Tensor):
        self.conv, self.ssm, self.started = conv, ssm, False

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.conv, self.ssm))

    def reset(self) -> None:
        self.conv.zero_()
        self.ssm.zero_()
        self.started = False


def _readout(h, C):
    """h [..., I, N] read by C [..., N] (shared by the channels) or [..., I, N] (per channel)."""
    if C.dim() == h.dim():  # (a batched matmul, as transformers' per-head readout is)
        return torch.einsum("...in,...in->...i", h, C.float())
    return torch.einsum("...in,...n->...i", h, C.float())


def selective_scan(x, dt, A, B, C, h: torch.Tensor) -> torch.Tensor:
    """The recurrence over T tokens, updating h [b, I, N] (fp32) in place. x [b, T, I],
    dt [b, T, I] (softplus'd), A [I, N] (negative, fp32), B and C [b, T, N] (or per channel,
    [b, T, I, N]) -> y [b, T, I] (fp32), without the D skip. The discretisation is
    transformers': exp(A dt) and (dt B) x, in fp32."""
    if B.dim() == 3:
        B = B.unsqueeze(2)
    if x.shape[1] == 1:  # a decode step: no block to stack
        decay = torch.exp(A * dt[:, 0, :, None])
        feed = (dt[:, 0, :, None] * B[:, 0].float()) * x[:, 0, :, None].float()
        h.copy_(decay * h + feed)
        return _readout(h, C[:, 0]).unsqueeze(1)
    ys = []
    for lo in range(0, x.shape[1], SCAN_BLOCK):
        span = slice(lo, lo + SCAN_BLOCK)
        decay = torch.exp(A * dt[:, span, :, None])  # [b, t, I, N]
        feed = (dt[:, span, :, None] * B[:, span].float()) * x[:, span, :, None].float()
        states = []
        for t in range(decay.shape[1]):
            h.copy_(decay[:, t] * h + feed[:, t])
            states.append(h.clone())
        ys.append(_readout(torch.stack(states, 1), C[:, span]))
    return torch.cat(ys, 1)


class HeadLinear(nn.Module):
    """n_heads independent Linears, one per head: weight [heads, out, in] (+ bias [heads, out]),
    input [..., heads, in] -> [..., heads, out]."""

    def __init__(self, heads: int, d_in: int, d_out: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(heads, d_out, d_in))
        self.bias = nn.Parameter(torch.zeros(heads, d_out)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.einsum("...hi,hoi->...ho", x, self.weight)
        return y if self.bias is None else y + self.bias


class MambaMixer(nn.Module):
    def __init__(self, d_model: int, mixer: MambaSpec):
        super().__init__()
        self.spec = m = mixer
        i = m.d_inner
        # depthwise (groups = channels), transformers' shape [d_inner, 1, conv_kernel]; padding
        # is ours to do (from the state's columns), so the conv computes only the used outputs
        self.conv1d = nn.Conv1d(i, i, m.conv_kernel, groups=i, bias=m.conv_bias)
        self.in_proj = Linear(d_model, 2 * i, bias=m.proj_bias)
        heads = () if m.n_heads == 1 else (m.n_heads,)
        self.channels = heads + (m.head_dim,) if heads else (i,)  # A_log's and D's layout
        if heads:
            self.x_proj = HeadLinear(m.n_heads, m.head_dim, m.x_proj_width, bias=False)
            self.dt_proj = HeadLinear(m.n_heads, m.dt_rank, m.head_dim, bias=True)
        else:
            self.x_proj = Linear(i, m.x_proj_width, bias=False)
            self.dt_proj = Linear(m.dt_rank, i, bias=True)
        # A = -exp(A_log) < 0 keeps every per-step decay exp(dt A) below 1; S4D-real init
        self.A_log = nn.Parameter(torch.log(torch.arange(1, m.d_state + 1, dtype=torch.float)
                                            ).expand(*self.channels, -1).clone())
        self.D = nn.Parameter(torch.ones(self.channels))
        self.out_proj = Linear(i, d_model, bias=m.proj_bias)
        self.norms = None
        if m.dt_bc_norm != "none":
            weight = m.dt_bc_norm == "weighted"
            self.dt_layernorm = RMSNorm(m.dt_rank, m.dt_bc_norm_eps, weight=weight)
            self.b_layernorm = RMSNorm(m.d_state, m.dt_bc_norm_eps, weight=weight)
            self.c_layernorm = RMSNorm(m.d_state, m.dt_bc_norm_eps, weight=weight)
            self.norms = (self.dt_layernorm, self.b_layernorm, self.c_layernorm)

    @torch.no_grad()
    def init_own_weights(self) -> None:
        """Mamba's own init, deterministic: A = -(1 .. N) in every channel (S4D-real), a dt_proj
        bias giving softplus(bias) = 0.01 (inside the paper's [0.001, 0.1]), D = 1."""
        m = self.spec
        self.A_log.copy_(torch.log(torch.arange(1, m.d_state + 1, dtype=torch.float32))
                         .expand(*self.channels, -1))
        self.dt_proj.bias.fill_(math.log(math.expm1(0.01)))  # the inverse of softplus at 0.01
        self.D.fill_(1.0)

    def _decays(self) -> torch.Tensor:
        """A = -exp(A_log) in fp32 ([d_inner, d_state]). Without autograd it is kept until
        A_log changes (its version counter): a decode step would otherwise spend two passes
        over d_inner x d_state, as long as its recurrence, recomputing a constant."""
        if torch.is_grad_enabled():
            return -torch.exp(self.A_log.float()).reshape(self.spec.d_inner, -1)
        key = (self.A_log._version, self.A_log.data_ptr(), self.A_log.device)
        if getattr(self, "_kept_key", None) != key:
            self._kept_A = -torch.exp(self.A_log.float()).reshape(self.spec.d_inner, -1)
            self._kept_key = key
        return self._kept_A

    def new_cache(self, batch: int, max_len: int = 0, device=None,
                  dtype: torch.dtype | None = None) -> MambaState:
        """A zero state for `batch` sequences (`max_len` does not change its size); `dtype` is
        the activations' (default: the weights'), the SSM state is fp32."""
        m, w = self.spec, self.in_proj.weight
        device = device or w.device
        conv = torch.zeros(batch, m.d_inner, m.conv_kernel, dtype=dtype or w.dtype, device=device)
        ssm = torch.zeros(batch, m.d_inner, m.d_state, dtype=torch.float32, device=device)
        return MambaState(conv, ssm)

    def forward(self, hidden: torch.Tensor, rope=None, start: int = 0,
                cache: MambaState | None = None) -> torch.Tensor:
        """[b, T, d_model] -> [b, T, d_model]. With a state (`cache`): continue from it and
        update it. `rope` and `start` are unused (the state carries the order); they keep the
        attention mixers' signature, so a block calls any mixer alike."""
        m, state = self.spec, cache
        x, z = self.in_proj(hidden).chunk(2, dim=-1)
        history = None if state is None else state.conv
        x = F.silu(causal_depthwise_conv(x.transpose(1, 2), self.conv1d, history))
        x = x.to(hidden.dtype).transpose(1, 2)  # [b, T, I]
        heads = m.n_heads > 1
        xh = x.unflatten(-1, (m.n_heads, m.head_dim)) if heads else x
        dt, B, C = self.x_proj(xh).split([m.dt_rank, m.d_state, m.d_state], dim=-1)
        if self.norms is not None:
            dt, B, C = (norm(t) for norm, t in zip(self.norms, (dt, B, C)))
        if heads:  # per head: dt [b, T, H, hd] -> channels; B, C to each head's channels
            dt = torch.einsum("bthr,hdr->bthd", dt, self.dt_proj.weight).flatten(-2)
            B, C = (t.repeat_interleave(m.head_dim, dim=2) for t in (B, C))
        else:
            dt = dt @ self.dt_proj.weight.t()  # the bias goes in with the softplus, in dt's dtype
        dt = F.softplus(dt + self.dt_proj.bias.reshape(-1).float().to(dt.dtype))
        A = self._decays()
        if state is not None and state.started:
            h = state.ssm
        else:
            h = torch.zeros(x.shape[0], m.d_inner, m.d_state, dtype=torch.float32,
                            device=x.device)
        y = selective_scan(x, dt, A, B, C, h)
        if state is not None:
            state.ssm.copy_(h)
            state.started = True
        y = (y + x.float() * self.D.reshape(-1).float()) * F.silu(z.float())
        return self.out_proj(y.to(hidden.dtype))


def mamba1(spec, mixer: MambaSpec) -> MambaMixer:
    """The factory the kinds registry names: (model spec, mixer spec) -> module."""
    return MambaMixer(spec.d_model, mixer)
