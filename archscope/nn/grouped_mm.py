"""Grouped matmuls for routed experts: rows sorted by expert times each expert's weight.

`grouped_linear` runs torch's grouped_mm where it can (a fused kernel on CUDA), else a padded
bmm; FLOP_FORMULAS gives FlopCounterMode the grouped_mm formula it lacks.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


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
