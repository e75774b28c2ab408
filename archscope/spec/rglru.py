"""The spec's RG-LRU mixer: Griffin's recurrent block (RecurrentGemma's `recurrent` layers).

A frozen dataclass whose field names are the YAML keys; beside each, the config.json key
transformers reads (RecurrentGemmaConfig). What the mixer holds per sequence is constant in
the context: the conv's last conv_kernel - 1 inputs and one value per channel (the LRU's
hidden state), not a per-token cache.

The layer (transformers' RecurrentGemmaRecurrentBlock and RecurrentGemmaRglru): linear_y and
linear_x (d_model -> lru_width, with biases); a causal depthwise conv of conv_kernel taps (with
a bias) over the x branch; the RG-LRU: per channel an input gate and a recurrence gate, each a
sigmoid of a block-diagonal linear map (n_heads blocks of lru_width / n_heads, with biases),
a decay a = exp(-8 * r * softplus(recurrent_param)) and the diagonal recurrence
h = a * h + sqrt(1 - a^2) * (i * x) (at position 0: h = i * x); the output is
linear_out(activation(linear_y(x)) * h), back to d_model with a bias.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import positive, require
from archscope.spec.components import Activation

# RecurrentGemmaRglru's fixed constant c in log a = -c * r * softplus(recurrent_param) (the
# Griffin paper's c = 8); config.json has no key for it
DECAY_SCALE = 8.0


@dataclass(frozen=True)
class RglruSpec:
    # no defaults for the shape (a spec states its own)
    kind: Literal["rglru"]
    lru_width: int  # lru_width (null there: hidden_size): channels of the recurrence
    n_heads: int  # num_attention_heads: the gates' diagonal blocks (lru_width / n_heads each)
    conv_kernel: int  # conv1d_width: taps of the causal depthwise conv over the x branch
    # hidden_activation: the y branch's (transformers gives it the MLP's activation too)
    activation: Activation = "gelu_tanh"

    def validate(self) -> None:
        positive(self, "lru_width", "n_heads", "conv_kernel")
        require(self.lru_width % self.n_heads == 0, "n_heads",
                f"must divide lru_width ({self.lru_width}): the gates are n_heads square "
                f"blocks of lru_width / n_heads, got {self.n_heads}")
        require(self.activation not in ("relu2", "xielu"), "activation",
                f"the y branch's activation is one of gelu_tanh, gelu, silu, relu, quick_gelu, "
                f"got {self.activation!r}")

    @property
    def block_width(self) -> int:
        """Channels of one gate block: lru_width / n_heads."""
        return self.lru_width // self.n_heads

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv: the x branch, lru_width."""
        return self.lru_width

    @property
    def conv_columns(self) -> int:
        """Inputs the conv state keeps: conv_kernel - 1 (the newest input comes with the step;
        transformers' conv1d_state is [B, lru_width, conv1d_width - 1])."""
        return self.conv_kernel - 1


# config.json key -> field, for the importer and exporter (activation: hidden_activation,
# read and written with the MLP's)
HF_KEYS = {
    "lru_width": "lru_width",
    "num_attention_heads": "n_heads",
    "conv1d_width": "conv_kernel",
}
