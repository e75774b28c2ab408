"""Normalisation layers, picked by `norm.kind`."""

from __future__ import annotations

import torch
from torch import nn

from archscope.spec.schema import NormSpec


class RMSNorm(nn.Module):
    """x / rms(x) * weight, computed in fp32 and cast back (as Llama's reference code does)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


def _layernorm(dim: int, spec: NormSpec) -> nn.Module:
    return nn.LayerNorm(dim, eps=spec.eps, bias=spec.has_bias)


def _rmsnorm(dim: int, spec: NormSpec) -> nn.Module:
    return RMSNorm(dim, spec.eps)


NORMS = {"layernorm": _layernorm, "rmsnorm": _rmsnorm}


def make_norm(spec: NormSpec, dim: int) -> nn.Module:
    return NORMS[spec.kind](dim, spec)
