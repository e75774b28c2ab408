"""Re-arrangements between an HF tensor and ours that a rename cannot express (a Rule's
`layout`), each as (HF -> ours, ours -> HF); the first is given our tensor's shape, which a
stacked HF tensor does not carry (how many experts it holds)."""

from __future__ import annotations

import torch


def _deinterleave(t: torch.Tensor) -> torch.Tensor:
    """[..., 2f] with gate and up alternating (gate at even positions) -> [..., 2f] gate first."""
    return torch.cat((t[..., 0::2], t[..., 1::2]), dim=-1)


def _interleave(t: torch.Tensor) -> torch.Tensor:
    """The inverse: [..., 2f] gate first -> gate and up alternating."""
    gate, up = t.chunk(2, dim=-1)
    return torch.stack((gate, up), dim=-1).flatten(-2)


def _swap(t: torch.Tensor) -> torch.Tensor:
    return t.transpose(-1, -2)


def _stacked(t: torch.Tensor, shape) -> torch.Tensor:
    """[E*f, d], the experts' rows one after another -> ours [E, f, d]."""
    return t.reshape(shape)


def _stacked_transposed(t: torch.Tensor, shape) -> torch.Tensor:
    """[E*f, d] -> ours [E, d, f]: each expert's [f, d] block transposed."""
    return t.reshape(shape[0], shape[2], shape[1]).transpose(1, 2)


def _unstacked(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1, t.shape[-1])


def _interleave_rows(t: torch.Tensor) -> torch.Tensor:
    """[2f, ...] first half then second -> their rows alternating."""
    first, second = t.chunk(2, dim=0)
    return torch.stack((first, second), dim=1).flatten(0, 1)


def _with_head_axis(t: torch.Tensor, dims: int) -> torch.Tensor:
    return t if t.dim() == dims else t.unsqueeze(0)


# layout: (HF -> ours, given our tensor's shape; ours -> HF). gpt-oss's GptOssExperts multiplies
# x @ W, so its expert weights are ours transposed ([E, d, 2f] and [E, f, d]), and its
# gate_up_proj (and its bias) alternate gate and up columns where ours has gate rows then up
# rows. DBRX's DbrxExpertGLU holds each projection's experts stacked in one 2-D tensor
# [E*f, d]: w1 (gate) and v1 (up) as nn.Linear rows, w2 (down) as x @ W, so transposed.
LAYOUTS = {
    "interleaved_gate_up": (lambda t, _: _swap(_deinterleave(t)),
                            lambda t: _interleave(_swap(t))),
    "interleaved": (lambda t, _: _deinterleave(t), _interleave),
    "transposed": (lambda t, _: _swap(t), _swap),
    "stacked_experts": (_stacked, _unstacked),
    "stacked_experts_transposed": (_stacked_transposed, lambda t: _unstacked(_swap(t))),
    # ERNIE 4.5's router bias is [1, n_experts] (one group) where ours is [n_experts]
    "one_row": (lambda t, _: t.reshape(t.shape[-1]), lambda t: t.reshape(1, -1)),
    # Zamba's Mamba in_proj alternates x and z rows (x at even rows) where ours has x then z
    "interleaved_rows": (lambda t, _: torch.cat((t[0::2], t[1::2])), _interleave_rows),
    # Zamba's per-head Mamba tensors [heads, ...] (x_proj, dt_proj, A_log: 3-D; dt_proj's bias
    # and D: 2-D): ours have no head axis with one head (nn.Linear, [d_inner, ...])
    "head_axis": (lambda t, shape: t.reshape(shape), lambda t: _with_head_axis(t, 3)),
    "head_axis_vector": (lambda t, shape: t.reshape(shape), lambda t: _with_head_axis(t, 2)),
}
