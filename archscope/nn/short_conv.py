"""LFM2's gated short convolution (transformers' Lfm2ShortConv) and its per-sequence state.

Modules and parameters carry transformers' names, so a checkpoint's `conv.*` tensors load as
they are (under `mixer`):

    in_proj   d -> 3w, split in this order into B, C and x
    conv      causal depthwise conv over Bx = B * x (w channels, conv_kernel taps, no
              activation); the output gate C multiplies it: y = C * conv(Bx)
    out_proj  w -> d
(biases on all three with `bias`, transformers' conv_bias). The state per sequence is the
conv's last conv_kernel inputs [B, w, conv_kernel] in the activations' dtype, as transformers'
cache keeps them. A one-token decode step runs the conv as nn/depthwise.py's per-channel
matmul, not F.conv1d.
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.nn.depthwise import causal_depthwise_conv
from archscope.nn.linear import Linear
from archscope.spec.short_conv import ShortConvSpec


class ShortConvState:
    """One layer's conv window for `batch` sequences, allocated once (a fixed address, like the
    static KV cache): conv [B, w, conv_kernel]."""

    def __init__(self, m: ShortConvSpec, batch: int, device, dtype: torch.dtype):
        self.conv = torch.zeros(batch, m.width, m.conv_kernel, device=device, dtype=dtype)

    def nbytes(self) -> int:
        return self.conv.numel() * self.conv.element_size()

    def reset(self) -> None:
        """A new sequence starts from zeros (what a fresh state holds)."""
        self.conv.zero_()


class ShortConv(nn.Module):
    def __init__(self, d_model: int, m: ShortConvSpec):
        super().__init__()
        self.m = m
        self.in_proj = Linear(d_model, m.in_proj_width, bias=m.bias)
        # the module only holds the weight [w, 1, K] (and bias) under transformers' name;
        # causal_depthwise_conv pads from zeros or the state itself
        self.conv = nn.Conv1d(m.width, m.width, m.conv_kernel, groups=m.width, bias=m.bias)
        self.out_proj = Linear(m.width, d_model, bias=m.bias)

    def new_cache(self, batch: int, max_len: int, device, dtype) -> ShortConvState:
        """The state for `batch` sequences; `max_len` does not change its size."""
        return ShortConvState(self.m, batch, device, dtype)

    def forward(self, x: torch.Tensor, rope=None, start: int = 0,
                cache: ShortConvState | None = None) -> torch.Tensor:
        """x [B, T, d] -> [B, T, d]. `rope` and `start` are unused (the conv window carries the
        order); they keep the attention mixers' signature so the block calls any mixer alike."""
        b, c, h = self.in_proj(x).transpose(1, 2).chunk(3, dim=1)  # [B, w, T] each
        conved = causal_depthwise_conv(b * h, self.conv, None if cache is None else cache.conv)
        return self.out_proj((c * conved.to(c.dtype)).transpose(1, 2))


def short_conv(spec, mixer: ShortConvSpec) -> ShortConv:
    """The factory the kinds registry names: (model spec, mixer spec) -> module."""
    return ShortConv(spec.d_model, mixer)
