"""Normalisation layers, picked by `norm.kind`."""

from __future__ import annotations

import torch
import torch.nn.functional as F
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


class LayerNorm1P(nn.LayerNorm):
    """LayerNorm scaling by (1 + weight), its weight initialised to 0, its bias added as usual
    (norm.unit_offset on a layernorm: transformers' NemotronLayerNorm1P)."""

    unit_offset = True

    def __init__(self, dim: int, eps: float, bias: bool = True):
        super().__init__(dim, eps=eps, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.normalized_shape, self.weight + 1.0, self.bias, self.eps)


class HeadwiseNorm(nn.Module):
    """A QK-norm over the last dim of q or k ([..., heads, width]) with a weight (and bias) of
    `shape`: (heads, width), a row per head (attention.qk_norm per_head: Cohere's
    CohereLayerNorm), or (width,), shared (a layernorm QK-norm: Phi-2's nn.LayerNorm).
    `layernorm` subtracts the mean, rmsnorm does not; computed in fp32 and cast back, as
    Cohere's. A 2-D weight sets its own initial values (ones; zeros with `unit_offset`)."""

    def __init__(self, shape: tuple[int, ...], eps: float, layernorm: bool,
                 unit_offset: bool | None = None, bias: bool = False):
        super().__init__()
        self.layernorm, self.unit_offset, self.eps = layernorm, bool(unit_offset), eps
        self.weight = nn.Parameter(torch.empty(shape))
        self.bias = nn.Parameter(torch.empty(shape)) if bias else None
        self.init_own_weights()

    @torch.no_grad()
    def init_own_weights(self) -> None:
        if self.weight.device.type != "meta":
            self.weight.fill_(0.0 if self.unit_offset else 1.0)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.float()
        if self.layernorm:
            y = y - y.mean(-1, keepdim=True)
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        y = y * (self.weight.float() + 1.0 if self.unit_offset else self.weight.float())
        return (y if self.bias is None else y + self.bias.float()).to(x.dtype)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.eps}, " + (
            "layernorm" if self.layernorm else "rmsnorm")


def _layernorm(dim: int, spec: NormSpec) -> nn.Module:
    if spec.unit_offset:  # Nemotron's LayerNorm1P
        return LayerNorm1P(dim, spec.eps, bias=spec.has_bias)
    # without a weight (norm.weight false, OLMo): no bias either, torch's elementwise_affine
    return nn.LayerNorm(dim, eps=spec.eps, elementwise_affine=spec.has_weight,
                        bias=spec.has_bias)


def _rmsnorm(dim: int, spec: NormSpec) -> nn.Module:
    return RMSNorm(dim, spec.eps, spec.unit_offset, spec.has_weight)


NORMS = {"layernorm": _layernorm, "rmsnorm": _rmsnorm}


def make_norm(spec: NormSpec, dim: int) -> nn.Module:
    return NORMS[spec.kind](dim, spec)


def qk_norm(spec: NormSpec, attn, heads: int, width: int) -> nn.Module:
    """One of an attention's QK-norms (attention.qk_norm head, per_head or full) over `heads`
    groups of `width` values: its kind and bias the attention's (qk_norm_kind, qk_norm_bias),
    its eps and unit offset the model's norm's."""
    layernorm = attn.qk_norm_kind == "layernorm"
    if attn.qk_norm == "per_head" or layernorm:
        shape = (heads, width) if attn.qk_norm == "per_head" else (width,)
        return HeadwiseNorm(shape, spec.eps, layernorm, spec.unit_offset, bool(attn.qk_norm_bias))
    return RMSNorm(width, spec.eps, spec.unit_offset)
