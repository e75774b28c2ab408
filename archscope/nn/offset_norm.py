"""RMSNorm whose weight is stored as an offset from one: x / rms(x) * (1 + weight).

Qwen3-Next's Qwen3NextRMSNorm (every norm of the model but the DeltaNet's gated one): a
checkpoint holds weights near zero, so loading one into a plain RMSNorm would scale by ~0.
The product is taken in fp32 and cast back at the end (transformers' order, which differs
from Llama's cast-then-scale in bf16).
"""

from __future__ import annotations

import torch
from torch import nn


class OffsetRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))  # zero: the identity scale
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.float())).type_as(x)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}, weight stored as offset from 1"
