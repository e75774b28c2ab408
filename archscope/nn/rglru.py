"""Griffin's recurrent block with the RG-LRU (RecurrentGemma's `recurrent` layers) and its
per-sequence state.

Modules and parameters carry transformers' names (RecurrentGemmaRecurrentBlock, whose
`rg_lru` is a RecurrentGemmaRglru), so a checkpoint's `temporal_block.*` tensors load as they
are:

    linear_y, linear_x   d -> lru_width, with biases
    linear_out           lru_width -> d, with a bias
    conv_1d              depthwise causal conv over the x branch, conv_kernel taps, with a bias
    rg_lru.recurrent_param                     [lru_width]
    rg_lru.input_gate_weight / _bias           [H, b, b] / [H, b]: block-diagonal, x @ W per block
    rg_lru.recurrent_gate_weight / _bias       the same shapes

out = linear_out(act(linear_y(x)) * rg_lru(conv_1d(linear_x(x)))). The RG-LRU, per channel:
i = sigmoid(x W_i + b_i), r = sigmoid(x W_r + b_r), log a = -8 r softplus(recurrent_param),
h = a h + sqrt(1 - a^2) (i x); at position 0 (a new sequence) a = 0 and the sqrt factor is 1,
as transformers' reset. The recurrence runs in fp32 and its state is fp32 whatever the
model's dtype (transformers' _rnn_scan acc_dtype and recurrent_states); the conv state keeps
the last conv_kernel - 1 inputs in the activations' dtype (transformers' conv1d_state).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.depthwise import causal_depthwise_conv
from archscope.nn.ffn import ACTIVATIONS
from archscope.nn.linear import Linear
from archscope.spec.rglru import DECAY_SCALE, RglruSpec

RECURRENT_DTYPE = torch.float32


class RglruState:
    """One layer's state for `batch` sequences, allocated once (a fixed address, like the
    static KV cache): conv [B, lru_width, conv_kernel - 1], recurrent [B, lru_width] (fp32)."""

    def __init__(self, g: RglruSpec, batch: int, device, dtype: torch.dtype):
        self.conv = torch.zeros(batch, g.lru_width, g.conv_columns, device=device, dtype=dtype)
        self.recurrent = torch.zeros(batch, g.lru_width, device=device, dtype=RECURRENT_DTYPE)

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in (self.conv, self.recurrent))

    def reset(self) -> None:
        """A new sequence starts from zeros (what a fresh state holds)."""
        self.conv.zero_()
        self.recurrent.zero_()


class Rglru(nn.Module):
    """The real-gated linear recurrent unit over [B, T, lru_width]."""

    def __init__(self, g: RglruSpec):
        super().__init__()
        self.g = g
        h, b = g.n_heads, g.block_width
        # real values come from the checkpoint or the builder's init
        self.recurrent_param = nn.Parameter(torch.zeros(g.lru_width))
        self.input_gate_weight = nn.Parameter(torch.zeros(h, b, b))
        self.input_gate_bias = nn.Parameter(torch.zeros(h, b))
        self.recurrent_gate_weight = nn.Parameter(torch.zeros(h, b, b))
        self.recurrent_gate_bias = nn.Parameter(torch.zeros(h, b))

    @torch.no_grad()
    def init_own_weights(self) -> None:
        """Deterministic decays, as transformers' init ranges them: softplus(recurrent_param)
        = -log(a0) with a0 spread over 0.9 .. 0.999 (so a = a0^(8 r)); the gates' biases 0."""
        a0 = torch.linspace(0.9, 0.999, self.g.lru_width)
        self.recurrent_param.copy_(torch.log(torch.expm1(-torch.log(a0))))
        self.input_gate_bias.zero_()
        self.recurrent_gate_bias.zero_()

    def _gate(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        """sigmoid(x W + b) per block: x [B, T, w] -> [B, T, w] (one baddbmm over the blocks)."""
        batch, tokens, width = x.shape
        blocks = x.reshape(batch * tokens, self.g.n_heads, -1).transpose(0, 1)  # [H, BT, b]
        out = torch.baddbmm(bias[:, None, :], blocks, weight)
        return torch.sigmoid(out.transpose(0, 1).reshape(batch, tokens, width))

    def forward(self, x: torch.Tensor, start, state: RglruState | None) -> torch.Tensor:
        tokens = x.shape[1]
        input_gate = self._gate(x, self.input_gate_weight, self.input_gate_bias)
        recurrent_gate = self._gate(x, self.recurrent_gate_weight, self.recurrent_gate_bias)
        log_a = -DECAY_SCALE * recurrent_gate * F.softplus(self.recurrent_param)
        a = torch.exp(log_a)
        multiplier = torch.sqrt(1 - torch.exp(2 * log_a))
        if not isinstance(start, int) or start == 0:  # position 0 starts a new sequence
            first = (torch.arange(tokens, device=x.device) + start == 0)[:, None]  # [T, 1]
            multiplier = torch.where(first, torch.ones_like(multiplier), multiplier)
            a = torch.where(first, torch.zeros_like(a), a)
        inputs = (x * input_gate) * multiplier.to(x.dtype)
        h = (x.new_zeros(x.shape[0], x.shape[2], dtype=RECURRENT_DTYPE) if state is None
             else state.recurrent)
        a, inputs = a.to(RECURRENT_DTYPE), inputs.to(RECURRENT_DTYPE)
        outs = []
        for t in range(tokens):  # a diagonal recurrence: one multiply-add per channel a step
            h = a[:, t] * h + inputs[:, t]
            outs.append(h)
        if state is not None:
            state.recurrent.copy_(h)
        return torch.stack(outs, dim=1).to(x.dtype)


class RecurrentBlock(nn.Module):
    """The mixer for one layer."""

    def __init__(self, d_model: int, g: RglruSpec):
        super().__init__()
        self.g = g
        self.linear_y = Linear(d_model, g.lru_width, bias=True)
        self.linear_x = Linear(d_model, g.lru_width, bias=True)
        self.linear_out = Linear(g.lru_width, d_model, bias=True)
        # holds the weight [w, 1, K] and bias under transformers' names; forward pads causally
        # itself from the state
        self.conv_1d = nn.Conv1d(g.lru_width, g.lru_width, g.conv_kernel, groups=g.lru_width)
        self.rg_lru = Rglru(g)
        self.act = ACTIVATIONS[g.activation]

    def new_cache(self, batch: int, max_len: int, device, dtype) -> RglruState:
        """The state for `batch` sequences; `max_len` does not change its size."""
        return RglruState(self.g, batch, device, dtype)

    def forward(self, x: torch.Tensor, rope=None, start: int = 0,
                cache: RglruState | None = None) -> torch.Tensor:
        """x [B, T, d] -> [B, T, d]. `rope` is unused (the state carries the order); `start`,
        the first token's position, marks a new sequence at 0."""
        y = self.act(self.linear_y(x))
        branch = self.linear_x(x).transpose(1, 2)
        branch = causal_depthwise_conv(branch, self.conv_1d, None if cache is None else cache.conv)
        h = self.rg_lru(branch.transpose(1, 2), start, cache)
        return self.linear_out(h * y)


def rglru(spec, mixer: RglruSpec) -> RecurrentBlock:
    """The factory the kinds registry names: (model spec, mixer spec) -> module."""
    return RecurrentBlock(spec.d_model, mixer)
