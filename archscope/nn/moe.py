"""Mixture-of-experts FFN: a router, routed experts (SwiGLU, or ungated: ffn.expert), optional
shared experts.

One component covers DeepSeekMoE, Mixtral, GraniteMoe, gpt-oss, Llama 4 and Phi-3.5-MoE; only
the spec's settings differ. The router `gate` (archscope/nn/router.py) gives each token its
top_k experts and their weights;
out = sum_k weight_k * expert_k(x) + shared_experts(x); with routing.weights "input"
(Llama 4: top-1, sigmoid) the weight scales the expert's input instead:
out = sum_k expert_k(weight_k * x) + shared_experts(x).
- ffn.expert mlp/relu2 (Nemotron-H): every expert, routed and shared, is ungated,
  down(act(up(x)));
- ffn.d_latent (Nemotron-H's latent MoE): the routed experts read fc1_latent_proj(x) (d ->
  d_latent) and their sum goes through fc2_latent_proj (d_latent -> d); router and shared
  experts see x itself.

Routed experts are stored as transformers 5.x does, so checkpoint mapping is a rename:
`experts.gate_up_proj` [n_experts, 2*d_expert, d_model] (gate rows first, then up) and
`experts.down_proj` [n_experts, d_model, d_expert]; ungated experts (ffn.expert mlp or relu2,
Nemotron-H's: down(act(up(x)))) hold `experts.up_proj` [n_experts, d_expert, d_model] instead.
The shared experts are one MLP of the experts' kind, n_shared_experts * d_expert wide (or
d_shared), named `shared_experts` (as DeepSeek's).

`experts_reference` (a loop over experts) is the readable definition; `experts_batched` does
the same work with no Python loop: sort the (token, slot) pairs by expert, then one grouped
matmul per weight (torch's grouped_mm; a padded bmm over the experts in use where it can't run).
Both size their work from the routing, which the host must read; a compiled or graph-captured
step, and any small step on CUDA, runs the fixed-shape forms of archscope.nn.moe_sync_free
instead (`RoutedExperts.path` picks; see `pick_path`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from archscope.nn.ffn import ACTIVATIONS, MLP, GatedMLP, GatedUnit
from archscope.nn.grouped_mm import FLOP_FORMULAS, grouped_linear  # noqa: F401 (re-exported)
from archscope.nn.linear import Linear, linear
from archscope.nn.moe_sync_free import experts_dense, experts_gathered
from archscope.nn.router import Router
from archscope.nn.shards import local
from archscope.spec.schema import FFNSpec, ModelSpec

__all__ = ["MoE", "Router", "RoutedExperts", "EXPERT_PATHS", "FLOP_FORMULAS", "pick_path",
           "experts_reference", "experts_batched", "grouped_linear"]


class RoutedExperts(nn.Module):
    """n_experts experts as two 3-D weights (transformers 5.x names and layout): SwiGLU experts
    hold `gate_up_proj`, ungated ones (`gated` false: Nemotron-H's) `up_proj` [E, d_expert, d]."""

    def __init__(self, n_experts: int, d_model: int, d_expert: int, activation: str, bias: bool,
                 limit: float | None = None, weigh_input: bool = False, gated: bool = True):
        super().__init__()
        self.weigh_input = weigh_input  # the router's weight scales the input, not the output
        self.up_name = "gate_up_proj" if gated else "up_proj"
        rows = 2 * d_expert if gated else d_expert
        self.register_parameter(self.up_name, nn.Parameter(torch.empty(n_experts, rows, d_model)))
        self.down_proj = nn.Parameter(torch.empty(n_experts, d_model, d_expert))
        # Biases: gpt-oss's experts have them (gate_up_proj_bias rows as gate_up_proj's)
        self.register_parameter(f"{self.up_name}_bias", nn.Parameter(
            torch.empty(n_experts, rows)) if bias else None)
        self.down_proj_bias = nn.Parameter(torch.empty(n_experts, d_model)) if bias else None
        # act(gate) * up, or gpt-oss's clamped form; ungated: act(up)
        self.glu = GatedUnit(activation, limit) if gated else None
        self.act = ACTIVATIONS[activation]
        self.path = "auto"  # or one of EXPERT_PATHS, whatever the device (tests, FLOP counts)

    def unit(self, h: torch.Tensor) -> torch.Tensor:
        """What an expert's first projection's output becomes before down_proj."""
        return self.act(h) if self.glu is None else self.glu(*h.chunk(2, dim=-1))

    def forward(self, x, weights, index):
        if x.is_meta:  # no values to route on (a meta decode step, archscope plan): a shape
            return torch.zeros_like(x)
        path = pick_path(x, index, self.down_proj.shape[0]) if self.path == "auto" \
            else self.path
        return EXPERT_PATHS[path](self, x, weights, index)

    def held(self):
        """(gate_up_proj or up_proj, down_proj, their biases) as this process holds them: the
        local experts under expert parallelism (see archscope.nn.shards)."""
        up, up_bias = getattr(self, self.up_name), getattr(self, f"{self.up_name}_bias")
        return tuple(None if t is None else local(t) for t in (
            up, self.down_proj, up_bias, self.down_proj_bias))


def pick_path(x: torch.Tensor, index: torch.Tensor, n_experts: int) -> str:
    """Which implementation runs, from what the host knows without reading the routing.

    A compiled or captured step must not synchronise: gathered while the routed pairs are no
    more than the experts (decode), dense beyond. On CUDA the small steps take the gathered
    form too (no sync per layer); a CUDA prefill, and everything on the CPU, sorts.
    """
    small = index.numel() <= n_experts
    capturing = x.is_cuda and torch.cuda.is_current_stream_capturing()
    if torch.compiler.is_compiling() or capturing:
        return "gathered" if small else "dense"
    return "gathered" if x.is_cuda and small else "sorted"


def experts_reference(experts: RoutedExperts, x, weights, index) -> torch.Tensor:
    """Loop over experts: each takes the tokens routed to it and adds back its weighted output."""
    out = torch.zeros_like(x)
    gate_up_proj, down_proj, gate_up_bias, down_bias = experts.held()
    for e in range(gate_up_proj.shape[0]):
        token, slot = torch.where(index == e)
        if token.numel() == 0:
            continue
        w = weights[token, slot, None]
        rows = (x[token] * w).to(x.dtype) if experts.weigh_input else x[token]
        h = F.linear(rows, gate_up_proj[e], None if gate_up_bias is None else gate_up_bias[e])
        y = F.linear(experts.unit(h), down_proj[e],
                     None if down_bias is None else down_bias[e])
        out.index_add_(0, token, (y if experts.weigh_input else y * w).to(x.dtype))
    return out


def experts_batched(experts: RoutedExperts, x, weights, index, method: str | None = None):
    """The same sum with no Python loop: rows sorted by expert, one grouped matmul per weight.

    `method`: "grouped_mm" or "padded_bmm" (see `grouped_linear`); None picks for the device.
    """
    gate_up_proj, down_proj, gate_up_bias, down_bias = experts.held()
    n_experts, top_k = gate_up_proj.shape[0], index.shape[1]
    flat = index.flatten()
    order = flat.argsort(stable=True)  # (token, slot) pairs grouped by expert
    expert_of_row = flat[order]
    token_of_row = order // top_k
    offsets = torch.bincount(flat, minlength=n_experts).cumsum(0).to(torch.int32)
    w = weights.flatten()[order, None]
    rows = x[token_of_row]
    if experts.weigh_input:
        rows = (rows * w).to(x.dtype)
    h = grouped_linear(rows, gate_up_proj, offsets, method)
    if gate_up_bias is not None:
        h = h + gate_up_bias[expert_of_row]
    y = grouped_linear(experts.unit(h), down_proj, offsets, method)
    if down_bias is not None:
        y = y + down_bias[expert_of_row]
    y = (y if experts.weigh_input else y * w).to(x.dtype)
    return torch.zeros_like(x).index_add_(0, token_of_row, y)


# RoutedExperts.path -> implementation; "auto" asks pick_path
EXPERT_PATHS = {"reference": experts_reference, "sorted": experts_batched,
                "gathered": experts_gathered, "dense": experts_dense}


class MoE(nn.Module):
    """Router + routed experts + shared experts; module names as transformers' DeepseekV2Moe."""

    def __init__(self, spec: ModelSpec, ffn: FFNSpec):
        super().__init__()
        d = spec.d_model
        w = ffn.d_latent or d  # the width the routed experts read and write
        self.gate = Router(d, ffn.n_experts, ffn.top_k, ffn.routing)
        gated = ffn.expert is None  # SwiGLU experts; else mlp or relu2, ungated (Nemotron-H)
        self.experts = RoutedExperts(ffn.n_experts, w, ffn.d_expert, ffn.activation, ffn.bias,
                                     ffn.limit, weigh_input=ffn.routing.weights == "input",
                                     gated=gated)
        shared = ffn.shared_width  # one MLP of the experts' kind, as wide as all of them
        self.shared_experts = None if not shared else (
            GatedMLP(d, shared, ffn.activation, ffn.bias, limit=ffn.limit) if gated
            else MLP(d, shared, ffn.activation, ffn.bias))
        # Qwen3-Next: sigmoid(x . w) scales the shared experts' output, token by token
        self.shared_expert_gate = Linear(d, 1, bias=False) if ffn.shared_gate else None
        # Nemotron-H's latent MoE: the routed experts between d -> d_latent and back
        latent = ffn.d_latent is not None
        self.fc1_latent_proj = Linear(d, w, bias=ffn.bias) if latent else None
        self.fc2_latent_proj = Linear(w, d, bias=ffn.bias) if latent else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        weights, index = self.gate(flat)
        if self.fc1_latent_proj is None:
            out = self.experts(flat, weights, index).view_as(x)
        else:
            out = self.fc2_latent_proj(self.experts(self.fc1_latent_proj(flat), weights, index))
            out = out.view_as(x)
        if self.shared_experts is not None:
            shared = self.shared_experts(x)
            if self.shared_expert_gate is not None:
                shared = torch.sigmoid(self.shared_expert_gate(x)) * shared
            out = out + shared
        return out
