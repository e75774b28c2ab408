"""The Mamba-2 (SSD) state mixer of Granite 4.0-H, Nemotron-H, Bamba, Mamba2ForCausalLM and
Falcon-H1, in plain torch.

    in_proj: d_model -> z (d_inner) | xBC (conv_dim) | dt (n_heads)
    xBC = silu(causal depthwise conv1d(xBC));  x | B | C = xBC   (B, C: n_groups x d_state)
    dt = softplus(dt + dt_bias);  A = -exp(A_log)                  (per head)
    h_t = exp(dt_t A) h_{t-1} + dt_t x_t B_t^T;  y_t = h_t C_t + D x_t   (per head: P x N state)
    out_proj(gated_rmsnorm(y, z))      (without the gated norm, Falcon-H1's: out_proj(y * silu(z)))

Falcon-H1 multiplies in_proj's five outputs by its µP vector (spec: proj_multipliers) before
anything reads them.

A prompt runs the chunked SSD scan (Mamba-2 paper, section 6: quadratic attention-like form
inside chunks of `chunk_size` tokens, a state passed between chunks); one cached token runs the
recurrence above. No fused kernels: this is the reference path, and its matmuls are the ones
`archscope/kinds/mamba2.py` counts. Module and parameter names are transformers' own
(in_proj, conv1d, dt_bias, A_log, D, norm.weight, out_proj), so checkpoints load by name.

Numerics follow transformers' torch path: the scan in fp32, dt clamped to the spec's limits in
the scan only (transformers' decode step does not clamp), the SSM state kept in fp32 and the
conv state in the activations' dtype. One deliberate difference: a decode step reads the
state out in fp32 and gates and normalises in fp32, where transformers first rounds the step's
output to the model's dtype; in bf16 the prefill is bit for bit the same and a decode step
differs by a bf16 rounding (and sits a little closer to the fp32 result).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.depthwise import causal_depthwise_conv
from archscope.nn.linear import Linear
from archscope.spec.mamba2 import Mamba2Spec


class Mamba2State:
    """One layer's per-sequence state: constant in size whatever the context.

    conv: [batch, conv_dim, conv_kernel], the last conv_kernel inputs of the conv (transformers
    keeps all kernel columns, though the next step reads only the newest conv_kernel - 1), in
    the activations' dtype. ssm: [batch, n_heads, head_dim, d_state], fp32 as transformers
    keeps it whatever the model's dtype. `started` is false until a first forward fills them.
    """

    def __init__(self, conv: torch.Tensor, ssm: torch.Tensor):
        self.conv, self.ssm, self.started = conv, ssm, False

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.conv, self.ssm))

    def reset(self) -> None:
        self.conv.zero_()
        self.ssm.zero_()
        self.started = False


class GatedRMSNorm(nn.Module):
    """RMSNorm of y gated by silu(z), each RMS over one group of `group_size` channels.

    norm_before_gate false (all three families): normalise y * silu(z); true: normalise y, then
    multiply by silu(z). Computed in fp32; the weight applies per channel.
    """

    def __init__(self, width: int, group_size: int, eps: float, norm_before_gate: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.group_size, self.eps, self.norm_before_gate = group_size, eps, norm_before_gate

    def forward(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        gate = F.silu(z.float())
        y = y.float() if self.norm_before_gate else y.float() * gate
        groups = y.unflatten(-1, (-1, self.group_size))
        y = (groups * torch.rsqrt(groups.pow(2).mean(-1, keepdim=True) + self.eps)).flatten(-2)
        y = self.weight.float() * y
        return y * gate if self.norm_before_gate else y


def segment_sums(a: torch.Tensor) -> torch.Tensor:
    """[..., Q] log-decays -> [..., Q, Q]: entry (l, s) is a_{s+1} + ... + a_l for s <= l (0 on
    the diagonal) and -inf above it, so exp() gives the causal decay from s to l.

    Summed by a masked cumsum rather than as cumsum(a)_l - cumsum(a)_s, which subtracts two
    large sums to get a small one and loses its precision in fp32; exp(-inf) = 0 masks the
    upper triangle without a multiply by a mask.
    """
    q = a.shape[-1]
    below = torch.ones(q, q, dtype=torch.bool, device=a.device).tril(-1)
    terms = a.unsqueeze(-1).expand(*a.shape, q).masked_fill(~below, 0)  # (k, s): a_k if k > s
    sums = terms.cumsum(-2)
    causal = torch.ones(q, q, dtype=torch.bool, device=a.device).tril()
    return sums.masked_fill(~causal, float("-inf"))


def chunked_scan(x, dt, A, B, C, chunk: int, initial: torch.Tensor | None):
    """The SSD scan over a prompt, fp32. x [b, T, H, P], dt [b, T, H] (discretisation steps,
    already softplus'd and clamped), A [H] (negative), B and C [b, T, H, N] (already repeated
    from groups to heads), initial [b, H, P, N] or None -> (y [b, T, H, P], final state).

    The prompt is zero-padded to whole chunks: a padded step has dt = 0, so it neither decays
    nor feeds the state, and the final state is the state after the last real token.
    Five matmuls, the terms kinds/mamba2.py counts (c chunks of Q):
    scores C_l.B_s inside each chunk, scores x values inside each chunk, each chunk's own end
    state, the states passed between chunks, and each chunk's start state read out by C.
    """
    b, T, H, P = x.shape
    pad = -T % chunk
    def blocks(t):  # [b, T, ...] -> [b, c, Q, ...]
        t = F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad))
        return t.unflatten(1, (-1, chunk))
    xdt = blocks(x * dt.unsqueeze(-1))
    a = blocks(dt * A).permute(0, 3, 1, 2)  # [b, H, c, Q] log-decay of each step
    Bc, Cc = blocks(B), blocks(C)
    a_cum = a.cumsum(-1)
    # inside chunks: y_l = sum_{s<=l} (C_l . B_s) exp(a_{s+1..l}) dt_s x_s
    scores = torch.einsum("bclhn,bcshn->bhcls", Cc, Bc) * torch.exp(segment_sums(a))
    y = torch.einsum("bhcls,bcshp->bclhp", scores, xdt)
    # each chunk's contribution to the state at its end: decays from each step to the chunk end
    to_end = torch.exp(a_cum[..., -1:] - a_cum)  # [b, H, c, Q]
    own = torch.einsum("bclhn,bclhp->bchpn", Bc * to_end.permute(0, 2, 3, 1).unsqueeze(-1), xdt)
    # states at chunk starts: every earlier chunk's own state, decayed by the chunks between
    start = torch.zeros_like(own[:, :1]) if initial is None else initial.float().unsqueeze(1)
    own = torch.cat([start, own], dim=1)  # [b, c+1, H, P, N]: the initial state is "chunk -1"
    between = torch.exp(segment_sums(F.pad(a_cum[..., -1], (1, 0))))  # [b, H, c+1, c+1]
    states = torch.einsum("bhzy,byhpn->bzhpn", between, own)
    # the state at each chunk's start, read out by C and decayed to each step of the chunk
    readout = torch.einsum("bclhn,bchpn->bclhp", Cc, states[:, :-1])
    y = y + readout * torch.exp(a_cum).permute(0, 2, 3, 1).unsqueeze(-1)
    return y.flatten(1, 2)[:, :T], states[:, -1]


class Mamba2Mixer(nn.Module):
    def __init__(self, d_model: int, mixer: Mamba2Spec, eps: float):
        super().__init__()
        self.spec = m = mixer
        self.in_proj = Linear(d_model, m.in_proj_width, bias=m.proj_bias)
        # depthwise (groups = channels): each channel of x, B, C has its own conv_kernel taps;
        # the weight has transformers' shape [conv_dim, 1, conv_kernel]. Padding is ours to do
        # (from the state's columns), so the conv computes only the outputs that are used.
        self.conv1d = nn.Conv1d(m.conv_dim, m.conv_dim, m.conv_kernel, groups=m.conv_dim,
                                bias=m.conv_bias)
        self.dt_bias = nn.Parameter(torch.ones(m.n_heads))
        # A = -exp(A_log) < 0 keeps every per-step decay exp(dt A) below 1; S4D-real init
        self.A_log = nn.Parameter(torch.log(torch.arange(1, m.n_heads + 1, dtype=torch.float)))
        self.D = nn.Parameter(torch.ones(m.n_heads))
        # without a gated norm (Falcon-H1's mamba_rms_norm false) y * silu(z) goes to out_proj
        self.norm = (GatedRMSNorm(m.d_inner, m.norm_group_size, eps, m.norm_before_gate)
                     if m.gated_norm else None)
        self.out_proj = Linear(m.d_inner, d_model, bias=m.proj_bias)
        self._proj_scales: dict = {}  # (device, dtype) -> Falcon-H1's µP vector over in_proj

    @torch.no_grad()
    def init_own_weights(self) -> None:
        """Mamba-2's own init, deterministic: A = -(1 .. H) (S4D-real), dt_bias giving
        softplus(dt_bias) = 0.01 (inside the paper's [0.001, 0.1]), D = 1."""
        h = self.spec.n_heads
        self.A_log.copy_(torch.log(torch.arange(1, h + 1, dtype=torch.float32)))
        self.dt_bias.fill_(math.log(math.expm1(0.01)))  # the inverse of softplus at 0.01
        self.D.fill_(1.0)

    def new_cache(self, batch: int, max_len: int = 0, device=None,
                  dtype: torch.dtype | None = None) -> Mamba2State:
        """A zero state for `batch` sequences (`max_len` does not change its size); `dtype` is
        the activations' (default: the weights'), the SSM state is fp32."""
        m, w = self.spec, self.in_proj.weight
        conv = torch.zeros(batch, m.conv_dim, m.conv_kernel, dtype=dtype or w.dtype,
                           device=device or w.device)
        ssm = torch.zeros(batch, m.n_heads, m.head_dim, m.d_state, dtype=torch.float32,
                          device=device or w.device)
        return Mamba2State(conv, ssm)

    def _conv(self, xbc: torch.Tensor, state: Mamba2State | None) -> torch.Tensor:
        """silu(causal conv) over [b, T, conv_dim]; the state supplies the columns before the
        prompt (zeros when fresh: transformers pads a fresh prompt with zeros) and keeps the
        last conv_kernel inputs."""
        history = None if state is None else state.conv
        out = causal_depthwise_conv(xbc.transpose(1, 2), self.conv1d, history)
        return F.silu(out).to(xbc.dtype).transpose(1, 2)

    def _scaled(self, proj: torch.Tensor) -> torch.Tensor:
        """in_proj's outputs times the spec's proj_multipliers (one per segment z, x, B, C, dt),
        as Falcon-H1 multiplies them by its mup_vector; the vector is made once per device and
        dtype (a plain attribute, not a buffer: nothing to load or initialise)."""
        m = self.spec
        if m.proj_multipliers is None:
            return proj
        key = (proj.device, proj.dtype)
        if key not in self._proj_scales:
            self._proj_scales[key] = torch.cat([torch.full((w,), v, dtype=proj.dtype,
                                                           device=proj.device)
                                                for w, v in zip(m.proj_widths,
                                                                m.proj_multipliers)])
        return proj * self._proj_scales[key]

    def _gate(self, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        """The gated norm, or without one y * silu(z), in fp32."""
        if self.norm is not None:
            return self.norm(y, z)
        return y.float() * F.silu(z.float())

    def _heads(self, t: torch.Tensor) -> torch.Tensor:
        """[..., n_groups * N] -> [..., n_heads, N]: group g serves heads g*H/G .. (g+1)*H/G-1."""
        m = self.spec
        return t.unflatten(-1, (m.n_groups, m.d_state)).repeat_interleave(m.heads_per_group, -2)

    def _step(self, x, dt, A, B, C, state: Mamba2State) -> torch.Tensor:
        """One token by the recurrence, updating state.ssm in place: x [b, H, P], dt [b, H]."""
        dt = F.softplus(dt + self.dt_bias.to(dt.dtype)).float()  # no clamp: see the spec
        decay = torch.exp(dt * A)[..., None, None]
        feed = (dt.unsqueeze(-1) * x.float()).unsqueeze(-1) * B.float().unsqueeze(-2)
        state.ssm.copy_(state.ssm * decay + feed)
        y = torch.einsum("bhpn,bhn->bhp", state.ssm, C.float())
        return y + self.D.float()[:, None] * x.float()

    def forward(self, hidden: torch.Tensor, rope=None, start: int = 0,
                cache: Mamba2State | None = None) -> torch.Tensor:
        """[b, T, d_model] -> [b, T, d_model]. With a state (`cache`): continue from it and
        update it (one token after a first call runs the recurrence; more run the scan from
        it). `rope` and `start` are unused (the state carries the order); they keep the
        attention mixers' signature, so a block calls any mixer alike."""
        state = cache
        m = self.spec
        b, T, _ = hidden.shape
        z, xbc, dt = self._scaled(self.in_proj(hidden)).split([m.d_inner, m.conv_dim, m.n_heads],
                                                              dim=-1)
        x, B, C = self._conv(xbc, state).split(
            [m.d_inner, m.n_groups * m.d_state, m.n_groups * m.d_state], dim=-1)
        x = x.unflatten(-1, (m.n_heads, m.head_dim))
        A = -torch.exp(self.A_log.float())
        if state is not None and state.started and T == 1:
            y = self._step(x[:, 0], dt[:, 0], A, self._heads(B[:, 0]), self._heads(C[:, 0]), state)
            y = y.unsqueeze(1)
        else:
            dt = F.softplus(dt + self.dt_bias.to(dt.dtype))
            dt = dt.clamp(m.dt_limit_min, m.dt_limit_max).float()
            initial = state.ssm if state is not None and state.started else None
            y, final = chunked_scan(x.float(), dt, A, self._heads(B.float()),
                                    self._heads(C.float()), m.chunk_size, initial)
            y = y + self.D.float()[:, None] * x.float()
            if state is not None:
                state.ssm.copy_(final)
        if state is not None:
            state.started = True
        y = self._gate(y.flatten(-2), z)
        return self.out_proj(y.to(hidden.dtype))


def mamba2(spec, mixer: Mamba2Spec) -> Mamba2Mixer:
    """The factory the kinds registry will name: (model spec, mixer spec) -> module. The gated
    norm takes the model's norm eps, as all three families do."""
    return Mamba2Mixer(spec.d_model, mixer, spec.norm.eps)
