"""Feed-forward layers: the two-matrix MLP (GPT-2's GELU, Nemotron-H's squared ReLU, Apertus's
xIELU) and the gated MLP (Llama's SwiGLU, Gemma's GeGLU; gpt-oss's clamped unit through
`ffn.limit`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.linear import Linear
from archscope.nn.norms import RMSNorm
from archscope.spec.schema import FFNSpec, ModelSpec

ACTIVATIONS = {
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu": F.gelu,
    "silu": F.silu,
    "relu": F.relu,
    "relu2": lambda x: torch.square(F.relu(x)),  # transformers' ReLUSquaredActivation
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),  # transformers' QuickGELUActivation
}


class GatedUnit(nn.Module):
    """act(gate) * up; with `limit` (gpt-oss's swiglu_limit) gate is clamped above at limit,
    up to [-limit, limit], and the product is act(gate) * (up + 1), as GptOssExperts computes.
    gpt-oss's `gate * sigmoid(1.702 * gate)` is the quick_gelu activation."""

    def __init__(self, activation: str, limit: float | None = None):
        super().__init__()
        self.act, self.limit = ACTIVATIONS[activation], limit

    def forward(self, gate, up):
        if self.limit is None:
            return self.act(gate) * up
        gate = gate.clamp(max=self.limit)
        return self.act(gate) * (up.clamp(-self.limit, self.limit) + 1)


class XIELU(nn.Module):
    """xIELU (Apertus; transformers' XIELUActivation, its Python form): with
    a_p = softplus(alpha_p) and a_n = beta + softplus(alpha_n), x > 0 gives a_p x^2 + beta x,
    else (expm1(min(x, eps)) - x) a_n + beta x. alpha_p and alpha_n are learned ([1] each);
    beta and eps are persistent buffers, saved in checkpoints as transformers saves them."""

    INIT = {"alpha_p": 0.8, "alpha_n": 0.8, "beta": 0.5, "eps": -1e-6}  # transformers' defaults

    def __init__(self):
        super().__init__()
        self.alpha_p = nn.Parameter(torch.empty(1))
        self.alpha_n = nn.Parameter(torch.empty(1))
        self.register_buffer("beta", torch.empty(()))
        self.register_buffer("eps", torch.empty(()))

    @torch.no_grad()
    def init_own_weights(self) -> None:
        """transformers' initial values: alpha_p = softplus^-1(0.8), alpha_n =
        softplus^-1(0.8 - beta)."""
        i = self.INIT
        self.alpha_p.fill_(torch.log(torch.expm1(torch.tensor(i["alpha_p"]))).item())
        self.alpha_n.fill_(torch.log(torch.expm1(torch.tensor(i["alpha_n"] - i["beta"]))).item())
        self.beta.fill_(i["beta"])
        self.eps.fill_(i["eps"])

    def forward(self, x):
        alpha_p = F.softplus(self.alpha_p)
        alpha_n = self.beta + F.softplus(self.alpha_n)
        return torch.where(x > 0, alpha_p * x * x + self.beta * x,
                           (torch.expm1(torch.min(x, self.eps)) - x) * alpha_n + self.beta * x)


class MLP(nn.Module):
    """down(act(up(x))); xIELU is a module with parameters, `act_fn` (transformers' name)."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool):
        super().__init__()
        self.up_proj = Linear(d_model, d_ff, bias=bias)
        self.down_proj = Linear(d_ff, d_model, bias=bias)
        if activation == "xielu":
            self.act_fn = XIELU()
        else:
            self.act = ACTIVATIONS[activation]

    def forward(self, x):
        act = self.act_fn if "act_fn" in self._modules else self.act
        return self.down_proj(act(self.up_proj(x)))


class GatedMLP(nn.Module):
    """down(act(gate(x)) * up(x)): SwiGLU when the activation is SiLU, GeGLU with GELU-tanh.
    `fused` (Phi-3): one gate_up_proj d -> 2*d_ff, gate rows first (transformers' Phi3MLP
    chunks its output into gate, up), under its HF name so a checkpoint loads as it is.
    `sub_norm` (BitNet): a norm of act(gate) * up before down_proj, `ffn_sub_norm`.
    `gate_scale` (Falcon-H1's first mlp_multiplier) multiplies gate(x) before the activation."""

    def __init__(self, d_model: int, d_ff: int, activation: str, bias: bool,
                 fused: bool = False, limit: float | None = None,
                 sub_norm: nn.Module | None = None, gate_scale: float = 1.0):
        super().__init__()
        self.fused = fused
        self.gate_scale = None if gate_scale == 1 else gate_scale
        if fused:
            self.gate_up_proj = Linear(d_model, 2 * d_ff, bias=bias)
        else:
            self.gate_proj = Linear(d_model, d_ff, bias=bias)
            self.up_proj = Linear(d_model, d_ff, bias=bias)
        self.down_proj = Linear(d_ff, d_model, bias=bias)
        self.glu = GatedUnit(activation, limit)
        self.ffn_sub_norm = sub_norm if sub_norm is not None else nn.Identity()

    def gate_up(self, x):
        if self.fused:
            return self.gate_up_proj(x).chunk(2, dim=-1)
        return self.gate_proj(x), self.up_proj(x)

    def forward(self, x):
        gate, up = self.gate_up(x)
        if self.gate_scale is not None:
            gate = gate * self.gate_scale
        return self.down_proj(self.ffn_sub_norm(self.glu(gate, up)))


def mlp(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    return MLP(spec.d_model, ffn.d_ff, ffn.activation, ffn.bias)


def _sub_norm(spec: ModelSpec, ffn: FFNSpec) -> nn.Module | None:
    """BitNet's ffn_sub_norm: an RMSNorm of d_ff with the model's eps (and Gemma's offset)."""
    return RMSNorm(ffn.d_ff, spec.norm.eps, spec.norm.unit_offset) if ffn.sub_norm else None


def swiglu(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    return GatedMLP(spec.d_model, ffn.d_ff, ffn.activation, ffn.bias, bool(ffn.fused_gate_up),
                    ffn.limit, _sub_norm(spec, ffn), spec.mults.ffn_gate)


def geglu(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    """Gemma's MLP: the gated form with GELU (tanh approximation), which defines the kind."""
    return GatedMLP(spec.d_model, ffn.d_ff, "gelu_tanh", ffn.bias, bool(ffn.fused_gate_up),
                    ffn.limit, _sub_norm(spec, ffn), spec.mults.ffn_gate)


def relu2(spec: ModelSpec, ffn: FFNSpec) -> nn.Module:
    """Nemotron-H's MLP: down(relu(up(x))^2), two matrices, no gate."""
    return MLP(spec.d_model, ffn.d_ff, "relu2", ffn.bias)
