"""Feed-forward layers: the two-matrix MLP (GPT-2's GELU, Nemotron-H's squared ReLU) and the
gated MLP (Llama's SwiGLU, Gemma's GeGLU)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.spec.schema import FFNSpec, ModelSpec

ACTIVATIONS = {
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu": F.gelu,
    "silu": F.silu,
    "relu": F.relu,
    "relu2": lambda x: torch.square(F.relu(x)),  # transformers' ReLUSquaredActivation
}


class MLP(nn.Module):
    """down(act(up(x)))."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool):
        super().__init__()
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACTIVATIONS[activation]

    def forward(self, x):
        return self.down_proj(self.act(self.up_proj(x)))


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)): SwiGLU when the activation is SiLU, GeGLU with GELU-tanh.
    `fused` (Phi-3): one gate_up_proj d -> 2*d_ff, gate rows first (transformers' Phi3MLP
    chunks its output into gate, up), under its HF name so a checkpoint loads as it is."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool,
                 fused: bool = False):
        super().__init__()
        self.fused = fused
        if fused:
            self.gate_up_proj = nn.Linear(d_model, 2 * d_ff, bias=bias)
        else:
            self.gate_proj = nn.Linear(d_model, d_ff, bias=bias)
            self.up_proj = nn.Linear(d_model, d_ff, bias=bias)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)
        self.act = ACTIVATIONS[activation]

    def gate_up(self, x):
        if self.fused:
            return self.gate_up_proj(x).chunk(2, dim=-1)
        return self.gate_proj(x), self.up_proj(x)

    def forward(self, x):
        gate, up = self.gate_up(x)
        return self.down_proj(self.act(gate) * up)


def mlp(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    return MLP(spec.d_model, ffn.d_ff, ffn.activation, ffn.bias)


def swiglu(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    return GatedMLP(spec.d_model, ffn.d_ff, ffn.activation, ffn.bias, bool(ffn.fused_gate_up))


def geglu(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    """Gemma's MLP: the gated form with GELU (tanh approximation), which defines the kind."""
    return GatedMLP(spec.d_model, ffn.d_ff, "gelu_tanh", ffn.bias, bool(ffn.fused_gate_up))


def relu2(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    """Nemotron-H's MLP: down(relu(up(x))^2), two matrices, no gate."""
    return MLP(spec.d_model, ffn.d_ff, "relu2", ffn.bias)
