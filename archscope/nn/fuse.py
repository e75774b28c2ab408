"""Fuse the projections that read the same input into one matmul, for decoding.

A decode step multiplies one token by q_proj, k_proj and v_proj (and by gate_proj and up_proj):
three (two) matrix-vector products, each its own kernel and each reading its own weights.
Concatenating the weights row-wise gives one Linear whose output splits into the same vectors,
so a step launches fewer kernels and streams the weights in one pass (as gpt-fast's wqkv).

A post-build pass, run on a model whose weights are final (loaded, on its one device): the
checkpoint names (q_proj, gate_proj, ...) and the tensor-parallel sharding, which splits q, k
and v separately, both need the separate modules, so models are built and loaded unfused and
fused only for the single-device fast path. The fused modules are plain nn.Linear, so a pass
that swaps Linears (quantisation) applies to them afterwards. `unfused_state_dict` gives the
checkpoint names back, as views of the fused weights (no copy).
"""

from __future__ import annotations

import torch
from torch import nn

from archscope.nn.attention import GQAAttention
from archscope.nn.ffn import GatedMLP
from archscope.nn.linear import Linear

# module kind -> (the separate projections, in the fused rows' order; the fused one's name).
# Both names are what the forward already reads when a spec asks for the fused layout
# (Phi-3's qkv_proj and gate_up_proj), so fusing only swaps modules and flips `fused`.
FUSIONS = {GQAAttention: (("q_proj", "k_proj", "v_proj"), "qkv_proj"),
           GatedMLP: (("gate_proj", "up_proj"), "gate_up_proj")}


def fuse_projections(model: nn.Module) -> int:
    """Replace every unfused q/k/v and gate/up group by one Linear; returns how many."""
    fused = 0
    for module in list(model.modules()):
        parts = FUSIONS.get(type(module))
        if parts is None or module.fused:
            continue
        names, target = parts
        setattr(module, target, _concatenated([getattr(module, n) for n in names]))
        for name in names:
            delattr(module, name)
        module.fused = True
        module.unfused_names = names  # what unfused_state_dict restores
        fused += 1
    return fused


@torch.no_grad()
def _concatenated(linears: list[nn.Linear]) -> nn.Linear:
    first = linears[0]
    if any(hasattr(l.weight, "to_local") or l._forward_hooks or l._forward_pre_hooks
           for l in linears):  # a DTensor shard or an offloading hook: not one device's Linear
        raise ValueError("fuse_projections is for a whole model on one device (not sharded, "
                         "not dispatched with hooks)")
    has_bias = first.bias is not None
    out = Linear(first.in_features, sum(l.out_features for l in linears), bias=has_bias,
                    device="meta")
    out.weight = nn.Parameter(torch.cat([l.weight for l in linears]),
                              requires_grad=first.weight.requires_grad)
    if has_bias:
        out.bias = nn.Parameter(torch.cat([l.bias for l in linears]),
                                requires_grad=first.bias.requires_grad)
    return out


def unfused_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """model.state_dict() under the names it had before fuse_projections (row views of the
    fused tensors); a model never fused gives its own state_dict."""
    state = model.state_dict()
    for prefix, module in model.named_modules():
        names = getattr(module, "unfused_names", None)
        if names is None:
            continue
        target = FUSIONS[type(module)][1]
        fused = getattr(module, target)
        sizes = _row_counts(module, names, fused.out_features)
        base = f"{prefix}." if prefix else ""
        for kind in ("weight", "bias"):
            tensor = state.pop(f"{base}{target}.{kind}", None)
            if tensor is not None:
                for name, part in zip(names, tensor.split(sizes)):
                    state[f"{base}{name}.{kind}"] = part
    return state


def _row_counts(module: nn.Module, names, rows: int) -> list[int]:
    """How many of the fused rows each original projection had."""
    if isinstance(module, GQAAttention):
        return list(module.widths)
    return [rows // len(names)] * len(names)  # gate and up: equal halves
