"""Normalisation layers, picked by `norm.kind`."""

from __future__ import annotations

import torch
from torch import nn

from archscope.spec.schema import NormSpec


class RMSNorm(nn.Module):
    """x / rms(x) * weight, computed in fp32 and cast back (as Llama's reference code does).

    `unit_offset` (norm.unit_offset, Gemma): x / rms(x) * (1 + weight) with the weight
    initialised to 0, and the order of transformers' Gemma3RMSNorm: the scale is applied in fp32
    and only the product is cast back, where Llama casts before multiplying (the two differ in
    bf16, not in fp32).
    """

    def __init__(self, dim: int, eps: float, unit_offset: bool | None = None,
                 weight: bool = True):
        super().__init__()
        self.unit_offset, self.dim = bool(unit_offset), dim
        # without a weight (norm.weight false, nanochat): x / rms(x) alone
        self.weight = (nn.Parameter(torch.zeros(dim) if self.unit_offset else torch.ones(dim))
                       if weight else None)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        if self.weight is None:
            return y.to(dtype)
        if self.unit_offset:
            return (y * (1.0 + self.weight.float())).to(dtype)
        return self.weight * y.to(dtype)

    def extra_repr(self) -> str:
        return f"{self.dim}, eps={self.eps}" + (", 1 + weight" if self.unit_offset else
                                                ", no weight" if self.weight is None else "")


def _layernorm(dim: int, spec: NormSpec) -> nn.Module:
    # without a weight (norm.weight false, OLMo): no bias either, torch's elementwise_affine
    return nn.LayerNorm(dim, eps=spec.eps, elementwise_affine=spec.has_weight,
                        bias=spec.has_bias)


def _rmsnorm(dim: int, spec: NormSpec) -> nn.Module:
    return RMSNorm(dim, spec.eps, spec.unit_offset, spec.has_weight)


NORMS = {"layernorm": _layernorm, "rmsnorm": _rmsnorm}


def make_norm(spec: NormSpec, dim: int) -> nn.Module:
    return NORMS[spec.kind](dim, spec)
