"""MXFP4 weights as the published gpt-oss checkpoints store their experts, dequantised on read.

A tensor NAME is stored as `NAME_blocks` (uint8 [..., rows, G, 16]: 32 FP4 values per block,
two per byte, the low nibble first) and `NAME_scales` (uint8 [..., rows, G]: one E8M0 scale per
block, the power of two 2^(s - 127)). Each FP4 code is an E2M1 number; the sixteen values are
those of the OCP Microscaling Formats (MX) v1.0 specification, section 5.3.3 (sign bit, two
exponent bits, one mantissa bit). A row of G blocks is G * 32 values along the input dimension,
so the dequantised [..., rows, G*32] is transposed to GptOssExperts' [..., in, out] layout,
which the gpt_oss weight table then maps as it maps an unquantised checkpoint.
"""

from __future__ import annotations

import torch

# E2M1 codes 0..15: +0, 0.5, 1, 1.5, 2, 3, 4, 6, then the same negated (OCP MX v1.0)
FP4_E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
BLOCKS, SCALES = "_blocks", "_scales"


def packed_pairs(names) -> dict[str, tuple[str, str]]:
    """{NAME: (NAME_blocks, NAME_scales)} for every block tensor whose scales are present."""
    names = set(names)
    return {n[:-len(BLOCKS)]: (n, n[:-len(BLOCKS)] + SCALES) for n in names
            if n.endswith(BLOCKS) and n[:-len(BLOCKS)] + SCALES in names}


def dequantised_shape(blocks_shape: tuple[int, ...]) -> tuple[int, ...]:
    """[..., rows, G, 16] -> [..., G*32, rows] (the values per row, then transposed)."""
    *lead, rows, groups, width = blocks_shape
    return (*lead, groups * width * 2, rows)


def dequantise(blocks: torch.Tensor, scales: torch.Tensor,
               dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The float tensor the pair encodes, transposed as `dequantised_shape` says."""
    if blocks.shape[:-1] != scales.shape:
        raise ValueError(f"MXFP4 blocks {list(blocks.shape)} and scales {list(scales.shape)} "
                         "disagree: expected scales of the blocks' shape less its last axis")
    codes = blocks.to(torch.uint8)
    table = torch.tensor(FP4_E2M1, dtype=torch.float32, device=blocks.device)
    values = torch.stack((table[(codes & 0x0F).long()], table[(codes >> 4).long()]), dim=-1)
    values = values.flatten(-2)  # [..., rows, G, 32]: low nibble first within each byte
    exponent = scales.to(torch.int32) - 127  # E8M0: a power of two, bias 127
    values = torch.ldexp(values, exponent.unsqueeze(-1).to(torch.float32))
    return values.flatten(-2).transpose(-1, -2).to(dtype)  # [..., G*32, rows]
