"""Re-arrangements between an HF tensor and ours that a rename cannot express (a Rule's
`layout`), each as (HF -> ours, ours -> HF)."""

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


# layout: (HF -> ours, ours -> HF). gpt-oss's GptOssExperts multiplies x @ W, so its expert
# weights are ours transposed ([E, d, 2f] and [E, f, d]), and its gate_up_proj (and its bias)
# alternate gate and up columns where ours has gate rows then up rows.
LAYOUTS = {
    "interleaved_gate_up": (lambda t: _swap(_deinterleave(t)), lambda t: _interleave(_swap(t))),
    "interleaved": (_deinterleave, _interleave),
    "transposed": (_swap, _swap),
}
