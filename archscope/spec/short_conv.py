"""The spec of a gated short convolution (LFM2's `conv` layers, transformers' Lfm2ShortConv):
the state mixer LFM2 and LFM2-MoE put where attention would be.

A frozen dataclass whose field names are the YAML keys; beside each, the config.json key
transformers reads (Lfm2Config, Lfm2MoeConfig). With d the model's width and w = `width`:

    in_proj    d -> 3w, split in this order into B, C and x (w channels each)
    Bx = B * x                       elementwise input gate
    conv       causal depthwise conv of conv_kernel taps over Bx (no activation)
    y  = C * conv(Bx)                elementwise output gate
    out_proj   w -> d

transformers builds the layer at w = hidden_size only (the family readers set width to it and
the writers refuse another); the spec states it, so that what the layer weighs and holds
follows from the mixer's spec alone, as the other state mixers' do.

conv_bias (one switch in transformers) gives in_proj, the conv and out_proj their biases. What
the layer holds per sequence is the conv's window: the last conv_kernel inputs Bx of each of
the w channels (transformers' cache keeps all conv_kernel columns, in the activations' dtype;
a step reads conv_kernel - 1 of them), constant in the context.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import positive


@dataclass(frozen=True)
class ShortConvSpec:
    kind: Literal["short_conv"]
    width: int  # hidden_size in transformers: B, C, x, the conv's channels and out_proj's input
    conv_kernel: int = 3  # conv_L_cache: the conv's taps, and the columns its state keeps
    bias: bool = False  # conv_bias: biases on in_proj, the conv and out_proj alike

    def validate(self) -> None:
        positive(self, "width", "conv_kernel")

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv (Bx): the width."""
        return self.width

    @property
    def in_proj_width(self) -> int:
        """in_proj's outputs: B, C and x."""
        return 3 * self.width


# config.json key -> field, for the importer and exporter (width is hidden_size)
HF_KEYS = {"conv_L_cache": "conv_kernel", "conv_bias": "bias"}
