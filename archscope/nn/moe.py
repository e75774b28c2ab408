"""Mixture-of-experts FFN: a softmax router, routed SwiGLU experts, optional shared experts.

One component covers DeepSeekMoE, Mixtral, GraniteMoe, gpt-oss, Llama 4 and Phi-3.5-MoE; only
the spec's settings differ. The router `gate` (archscope/nn/router.py) gives each token its
top_k experts and their weights;
out = sum_k weight_k * expert_k(x) + shared_experts(x); with routing.weights "input"
(Llama 4: top-1, sigmoid) the weight scales the expert's input instead:
out = sum_k expert_k(weight_k * x) + shared_experts(x).

Routed experts are stored as transformers 5.x does, so checkpoint mapping is a rename:
`experts.gate_up_proj` [n_experts, 2*d_expert, d_model] (gate rows first, then up) and
`experts.down_proj` [n_experts, d_model, d_expert]. The shared experts are one SwiGLU of
n_shared_experts * d_expert named `shared_experts` (as DeepSeek's).

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

from archscope.nn.ffn import GatedMLP, GatedUnit
from archscope.nn.linear import Linear
from archscope.nn.moe_sync_free import experts_dense, experts_gathered
from archscope.nn.router import Router
from archscope.nn.shards import local
from archscope.spec.schema import FFNSpec, ModelSpec

__all__ = ["MoE", "Router", "RoutedExperts", "EXPERT_PATHS", "FLOP_FORMULAS", "pick_path",
           "experts_reference", "experts_batched", "grouped_linear"]


class RoutedExperts(nn.Module):
    """n_experts SwiGLU experts as two fused 3-D weights (transformers 5.x names and layout)."""

    def __init__(self, n_experts: int, d_model: int, d_expert: int, activation: str, bias: bool,
                 limit: float | None = None, weigh_input: bool = False):
        super().__init__()
        self.weigh_input = weigh_input  # the router's weight scales the input, not the output
        self.gate_up_proj = nn.Parameter(torch.empty(n_experts, 2 * d_expert, d_model))
        self.down_proj = nn.Parameter(torch.empty(n_experts, d_model, d_expert))
        # Biases: gpt-oss's experts have them (gate_up_proj_bias rows as gate_up_proj's)
        self.gate_up_proj_bias = (nn.Parameter(torch.empty(n_experts, 2 * d_expert))
                                  if bias else None)
        self.down_proj_bias = nn.Parameter(torch.empty(n_experts, d_model)) if bias else None
        self.glu = GatedUnit(activation, limit)  # act(gate) * up, or gpt-oss's clamped form
        self.path = "auto"  # or one of EXPERT_PATHS, whatever the device (tests, FLOP counts)

    def forward(self, x, weights, index):
        if x.is_meta:  # no values to route on (a meta decode step, archscope plan): a shape
            return torch.zeros_like(x)
        path = pick_path(x, index, self.gate_up_proj.shape[0]) if self.path == "auto" \
            else self.path
        return EXPERT_PATHS[path](self, x, weights, index)

    def held(self):
        """(gate_up_proj, down_proj, their biases) as this process holds them: the local
        experts under expert parallelism (see archscope.nn.shards)."""
        return tuple(None if t is None else local(t) for t in (
            self.gate_up_proj, self.down_proj, self.gate_up_proj_bias, self.down_proj_bias))


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
        gate, up = h.chunk(2, dim=-1)
        y = F.linear(experts.glu(gate, up), down_proj[e],
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
    gate, up = h.chunk(2, dim=-1)
    y = grouped_linear(experts.glu(gate, up), down_proj, offsets, method)
    if down_bias is not None:
        y = y + down_bias[expert_of_row]
    y = (y if experts.weigh_input else y * w).to(x.dtype)
    return torch.zeros_like(x).index_add_(0, token_of_row, y)


def grouped_linear(rows: torch.Tensor, weight: torch.Tensor, offsets: torch.Tensor,
                   method: str | None = None) -> torch.Tensor:
    """rows [M, K] sorted by group, weight [G, N, K] (nn.Linear layout), offsets [G] = the
    cumulative row counts: row m of group g gives rows[m] @ weight[g].T.

    grouped_mm (torch >= 2.8) does exactly the routed work, reading each used expert's weights
    in place; it is a fused kernel on CUDA and a loop in C++ on CPU. The padded bmm runs where
    grouped_mm cannot (unaligned sizes, older torch): it computes some padding and, when only
    some experts are used (decoding), copies their weights first.
    """
    method = method or ("grouped_mm" if _grouped_mm_usable(rows, weight) else "padded_bmm")
    if method == "grouped_mm":
        return F.grouped_mm(rows, weight.transpose(1, 2), offs=offsets)
    return _padded_bmm(rows, weight, offsets)


def _padded_bmm(rows, weight, offsets):
    """Scatter the rows of each expert that has any into a [experts used, max rows, K] block,
    and bmm once. Unused experts are left out, so a decode step reads top_k experts, not all."""
    counts = torch.diff(offsets, prepend=offsets.new_zeros(1)).long()
    used = counts.nonzero().squeeze(1)
    if len(used) < len(counts):
        weight, counts = weight.index_select(0, used), counts[used]
    group = torch.repeat_interleave(torch.arange(len(counts), device=rows.device), counts)
    pos = torch.arange(rows.shape[0], device=rows.device) - (counts.cumsum(0) - counts)[group]
    block = rows.new_zeros(len(counts), int(counts.max()), rows.shape[1])
    block[group, pos] = rows
    return torch.bmm(block, weight.transpose(1, 2))[group, pos]


_GROUPED_MM_WORKS: dict = {}


def _grouped_mm_usable(rows: torch.Tensor, weight: torch.Tensor) -> bool:
    """When this torch has grouped_mm for the device and dtype and the strides are 16-byte
    aligned (its requirement). Whether it runs is probed once per (device, dtype) on a tiny
    aligned problem: asking the build is the only reliable check across torch versions and GPUs.
    """
    size = rows.element_size()
    if rows.device.type == "meta" or not hasattr(F, "grouped_mm") \
            or (rows.shape[1] * size) % 16 or (weight.shape[1] * size) % 16:
        return False
    key = (rows.device, rows.dtype)
    if key not in _GROUPED_MM_WORKS:
        try:
            a = torch.ones(4, 16, device=rows.device, dtype=rows.dtype)
            b = torch.ones(2, 16, 16, device=rows.device, dtype=rows.dtype)
            offs = torch.tensor([1, 4], device=rows.device, dtype=torch.int32)
            _GROUPED_MM_WORKS[key] = bool(F.grouped_mm(a, b, offs=offs).eq(16).all())
        except (RuntimeError, NotImplementedError):
            _GROUPED_MM_WORKS[key] = False
    return _GROUPED_MM_WORKS[key]


def grouped_mm_flops(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of aten._grouped_mm for FlopCounterMode(custom_mapping=FLOP_FORMULAS), which has
    no formula of its own: each of the M rows meets one K x N matrix, 2*M*K*N (2 per MAC)."""
    m, k = a_shape[-2:]
    return 2 * m * k * b_shape[-1]


FLOP_FORMULAS = {torch.ops.aten._grouped_mm: grouped_mm_flops}

# RoutedExperts.path -> implementation; "auto" asks pick_path
EXPERT_PATHS = {"reference": experts_reference, "sorted": experts_batched,
                "gathered": experts_gathered, "dense": experts_dense}


class MoE(nn.Module):
    """Router + routed experts + shared experts; module names as transformers' DeepseekV2Moe."""

    def __init__(self, spec: ModelSpec, ffn: FFNSpec):
        super().__init__()
        d = spec.d_model
        self.gate = Router(d, ffn.n_experts, ffn.top_k, ffn.routing)
        self.experts = RoutedExperts(ffn.n_experts, d, ffn.d_expert, ffn.activation, ffn.bias,
                                     ffn.limit, weigh_input=ffn.routing.weights == "input")
        shared = ffn.shared_width  # one SwiGLU as wide as all of them
        self.shared_experts = (GatedMLP(d, shared, ffn.activation, ffn.bias, limit=ffn.limit)
                               if shared else None)
        # Qwen3-Next: sigmoid(x . w) scales the shared experts' output, token by token
        self.shared_expert_gate = Linear(d, 1, bias=False) if ffn.shared_gate else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        weights, index = self.gate(flat)
        out = self.experts(flat, weights, index).view_as(x)
        if self.shared_experts is not None:
            shared = self.shared_experts(x)
            if self.shared_expert_gate is not None:
                shared = torch.sigmoid(self.shared_expert_gate(x)) * shared
            out = out + shared
        return out
