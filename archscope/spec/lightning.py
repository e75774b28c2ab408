"""The spec of a lightning-attention state mixer (MiniMax-01's linear attention layers).

A frozen dataclass whose field names are the YAML keys; beside each, the config.json key
transformers reads (MiniMaxConfig, used by MiniMaxLightningAttention). It checks its own
consistency in `validate`. What the mixer holds per sequence is one head_dim x head_dim matrix
per head (the running sum of k^T v, decayed), not a per-token cache.

The layer: qkv_proj gives q, k and v (n_heads x head_dim each, laid out per head as
[q | k | v]) through the activation; each head keeps S = exp(-s_h) S + k^T v and reads
o = q S, where the decay rate s_h is not a weight nor a key: it is derived from the head and
the layer's depth, s_h = 2^(-8 (h + 1) / n_heads) * (1 - i / (n_layers - 1 + 1e-5) + 1e-5)
for layer i of n_layers (transformers' get_slope_rate). The heads' outputs, laid end to end,
pass an RMSNorm over the whole width, a sigmoid gate (output_gate, from the layer's input) and
out_proj. A prompt runs in blocks of block_size tokens (within a block, the decayed q k^T
square; across blocks, the state).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import positive
from archscope.spec.components import Activation

# MiniMaxConfig's block_size default (the published config.json leaves it out)
DEFAULT_BLOCK = 256


@dataclass(frozen=True)
class LightningSpec:
    kind: Literal["lightning"]
    n_heads: int  # num_attention_heads: one state matrix each
    head_dim: int  # head_dim (else hidden_size // num_attention_heads)
    # block_size: tokens per block of a prompt (the prefill's FLOPs change with it; the result,
    # in exact arithmetic, does not)
    block_size: int = DEFAULT_BLOCK
    # hidden_act: applied to q, k and v (transformers' MiniMax uses the FFN's activation here)
    activation: Activation = "silu"

    def validate(self) -> None:
        positive(self, "n_heads", "head_dim", "block_size")

    @property
    def width(self) -> int:
        """n_heads * head_dim: each of q, k, v, the gate and out_proj's input."""
        return self.n_heads * self.head_dim


def decay_rates(n_heads: int, layer: int, n_layers: int) -> list[float]:
    """Per head, the rate s_h of layer `layer` (see the module doc), in float64: transformers
    computes it in fp32 (nn/lightning.py does the same)."""
    depth = 1 - layer / (n_layers - 1 + 1e-5) + 1e-5
    base = 1 / (2 ** (8 / n_heads))
    return [base ** (h + 1) * depth for h in range(n_heads)]
