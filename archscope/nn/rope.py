"""Rotary position embeddings: inverse frequencies for default, linear, llama3, yarn and
longrope scaling.

The formulas follow the papers (RoFormer; Llama 3 "rope_scaling"; YaRN, Peng et al. 2023;
LongRoPE, Ding et al. 2024) in the parameterisation HF configs use, so a spec imported from a
config.json rotates the same way.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from archscope.spec.schema import ScalingSpec


def _base_inv_freq(dim: int, theta: float) -> torch.Tensor:
    return 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64, device="cpu").float() / dim))


def _linear(inv_freq: torch.Tensor, s: ScalingSpec, dim: int, theta: float):
    return inv_freq / s.factor, 1.0


def _llama3(inv_freq: torch.Tensor, s: ScalingSpec, dim: int, theta: float):
    """Long wavelengths are divided by `factor`, short ones kept, the band between blended."""
    old_len = s.original_max_seq_len
    low_wavelen, high_wavelen = old_len / s.low_freq_factor, old_len / s.high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    scaled = torch.where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq)
    smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
    blended = (1 - smooth) * scaled / s.factor + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(medium, blended, scaled), 1.0


def _yarn_mscale(scale: float, mscale: float = 1.0) -> float:
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(inv_freq: torch.Tensor, s: ScalingSpec, dim: int, theta: float):
    """Interpolate low frequencies, extrapolate high ones, ramp between (YaRN section 3.2)."""
    beta_fast, beta_slow = s.beta_fast or 32.0, s.beta_slow or 1.0

    def correction_dim(rotations: float) -> float:
        return dim * math.log(s.original_max_seq_len / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if s.truncate is not False:  # transformers' default: whole dimensions (gpt-oss: not)
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # the ramp needs a non-empty interval
    ramp = ((torch.arange(dim // 2, dtype=torch.float32, device="cpu") - low) / (high - low)).clamp(0, 1)
    extrapolate = 1 - ramp
    inv_freq = inv_freq / s.factor * (1 - extrapolate) + inv_freq * extrapolate
    if s.mscale and s.mscale_all_dim:
        attention_factor = _yarn_mscale(s.factor, s.mscale) / _yarn_mscale(s.factor, s.mscale_all_dim)
    else:
        attention_factor = _yarn_mscale(s.factor)
    return inv_freq, attention_factor


def longrope_inv_freq(dim: int, theta: float, factors) -> torch.Tensor:
    """Each pair's frequency divided by its own factor, in transformers' order of operations
    (1 / (factor * theta^(2i/dim)), so the fp32 values are the same bits)."""
    shape = torch.arange(0, dim, 2, dtype=torch.int64, device="cpu").float() / dim
    return 1.0 / (torch.tensor(factors, dtype=torch.float32, device="cpu") * theta ** shape)


def _longrope(inv_freq: torch.Tensor, s: ScalingSpec, dim: int, theta: float):
    """LongRoPE's short factors (RotaryEmbedding switches to the long ones past the original
    context); cos and sin scaled by its attention factor."""
    return longrope_inv_freq(dim, theta, s.short_factor), s.longrope_attention


SCALINGS = {"linear": _linear, "llama3": _llama3, "yarn": _yarn, "longrope": _longrope}


def rope_frequencies(dim: int, theta: float, scaling: ScalingSpec | None):
    """(inverse frequencies [dim/2] in fp32, factor applied to cos and sin)."""
    inv_freq = _base_inv_freq(dim, theta)
    if scaling is None:
        return inv_freq, 1.0
    return SCALINGS[scaling.kind](inv_freq, scaling, dim, theta)


class RotaryEmbedding(nn.Module):
    """cos/sin of each position, looked up in tables computed once per device and dtype.

    A decode step then costs one gather by its position tensor (which may live on the device),
    not a fresh outer product, cos and sin every step. The tables cover positions 0 .. n-1 for
    the n a caller says it needs (the model passes its cache's length), grown by doubling when
    a longer one is asked for. Not buffers: a meta-built model needs no materialising, and a
    state_dict holds no derived values. An attention factor of 1 (every scaling but YaRN and
    LongRoPE) is not multiplied in at all.

    LongRoPE keeps a second table, of its long factors: as transformers' Phi3 (its
    longrope_frequency_update), a forward call whose largest position + 1 exceeds
    original_max_seq_len rotates all its tokens with the long factors, any other with the short
    ones. Keys already cached keep the rotation of the call that wrote them.
    """

    def __init__(self, dim: int, theta: float, scaling: ScalingSpec | None,
                 reversed_: bool | None = None):
        super().__init__()
        self.dim = dim
        self._inv_freq, self.attention_factor = rope_frequencies(dim, theta, scaling)
        # position.reversed (nanochat): the angles negated, so sin changes sign, cos does not
        self.sign = -1.0 if reversed_ else 1.0
        self._freqs = (self._inv_freq,)
        self._switch_after = None  # longrope: the original context, past which it goes long
        if scaling is not None and scaling.kind == "longrope":
            self._switch_after = scaling.original_max_seq_len
            self._freqs += (longrope_inv_freq(dim, theta, scaling.long_factor),)
        self._tables: dict = {}  # (device, dtype) -> ((cos, sin), ...) per _freqs, each [n, dim]

    def forward(self, positions: torch.Tensor, dtype: torch.dtype, covering: int | None = None):
        """(cos, sin) [T, dim] for `positions` [T]. `covering`: a bound on every position (so
        none has to be read back from the device); without it the largest one is read."""
        if covering is None:
            covering = int(positions.max()) + 1 if positions.numel() else 1
        held = self.tables(covering, positions.device, dtype)
        cos, sin = held[0][0][positions], held[0][1][positions]
        if self._switch_after is None or covering <= self._switch_after or not positions.numel():
            return cos, sin
        # the call's choice, made on the device (no position is read back)
        long = positions.max() + 1 > self._switch_after
        return (torch.where(long, held[1][0][positions], cos),
                torch.where(long, held[1][1][positions], sin))

    def tables(self, covering: int, device: torch.device, dtype: torch.dtype):
        """((cos, sin), ...) [n, dim], one pair per frequency set (short, then LongRoPE's long),
        for positions 0 .. n-1, n >= covering, on `device` in `dtype`."""
        key = (torch.device(device), dtype)
        held = self._tables.get(key)
        if held is None or held[0][0].shape[0] < covering:
            n = max(covering, 2 * held[0][0].shape[0]) if held is not None else covering
            self._tables[key] = held = tuple(self._compute(n, key[0], dtype, inv)
                                             for inv in self._freqs)
        return held

    def _compute(self, n: int, device: torch.device, dtype: torch.dtype, inv_freq: torch.Tensor):
        inv_freq = inv_freq.to(device)
        angles = torch.arange(n, device=device).float()[:, None] * inv_freq[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        if self.sign < 0:
            sin = -sin
        if self.attention_factor != 1.0:  # YaRN's, LongRoPE's; a multiply by 1 is not run
            cos, sin = cos * self.attention_factor, sin * self.attention_factor
        return cos.to(dtype), sin.to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x [..., T, dim] by the angles of its positions (the half-split pairing)."""
    return x * cos + rotate_half(x) * sin


def apply_partial_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate the first cos.shape[-1] dims of x (half-split pairs within them, as transformers'
    Glm4Moe) and pass the rest through: partial RoPE (attention.rotary_fraction)."""
    dim = cos.shape[-1]
    return torch.cat((apply_rope(x[..., :dim], cos, sin), x[..., dim:]), dim=-1)


def apply_rope_interleaved(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate adjacent pairs of x [..., T, dim] (DeepSeek's MLA; Llama 4, position.interleaved).

    cos/sin are the model's [T, dim] tables in the half-split layout cat(angles, angles), so
    their first half holds one angle per pair. Tables narrower than x rotate its first dims and
    pass the rest through (GLM's partial RoPE on adjacent pairs).
    """
    dim = cos.shape[-1]
    if dim < x.shape[-1]:
        return torch.cat((apply_rope_interleaved(x[..., :dim], cos, sin), x[..., dim:]), dim=-1)
    half = dim // 2
    c, s = cos[..., :half].float(), sin[..., :half].float()
    x0, x1 = x[..., 0::2].float(), x[..., 1::2].float()  # in fp32, as transformers rotates
    return torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2).to(x.dtype)
