"""RoPE's frequency table from the spec alone (no torch): each rotated pair's base frequency,
its wavelength in tokens, the frequency after scaling, and the band it falls in.

Pair i of a rotated head of `dim` dims turns by theta^(-2i/dim) radians per token (RoFormer), a
wavelength of 2*pi*theta^(2i/dim) tokens. Scalings, in transformers' parameterisation (the same
formulas as nn/rope.py, which rotates with them; tests/estimate/test_rope.py compares the two):
- llama3: with L = original_max_seq_len, a pair whose wavelength exceeds L / low_freq_factor is
  slowed by `factor` ("low"), one shorter than L / high_freq_factor is kept ("high"), and one
  between blends the two linearly in L / wavelength ("medium").
- yarn: pairs below the correction dim of beta_fast rotations are kept, those above the
  correction dim of beta_slow are slowed by `factor`, a linear ramp between (YaRN sec. 3.2).
- linear: every pair slowed by `factor`.
- longrope: pair i slowed by its own short_factor[i] up to original_max_seq_len tokens and by
  long_factor[i] past it (a whole forward call at a time, by its last position); the table's
  scaled frequency is the long one (band "long"), the short factors' span is in the bands.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from archscope.spec.components import ScalingSpec


@dataclass(frozen=True)
class RopePair:
    index: int  # pair i rotates dims (i, i + dim/2) in Llama's half-split layout
    base: float  # theta^(-2i/dim), radians per token
    wavelength: float  # tokens per full turn, unscaled
    scaled: float  # radians per token after the scaling
    band: str  # 'high' (kept), 'medium' (blended), 'low' (slowed by factor); 'all' for linear

    @property
    def scaled_wavelength(self) -> float:
        return 2 * math.pi / self.scaled


@dataclass(frozen=True)
class RopeBands:
    """Where a scaling switches: wavelength limits (llama3) or pair indices (yarn)."""

    kind: str
    factor: float
    original_context: int | None
    high_below: float | None  # llama3: wavelengths under this are kept (L / high_freq_factor)
    low_above: float | None  # llama3: wavelengths over this are slowed (L / low_freq_factor)
    ramp: tuple[float, float] | None  # yarn: pairs below ramp[0] kept, above ramp[1] slowed
    # longrope: the smallest and largest short factor, then long factor, and the factor on cos
    # and sin
    spans: tuple[float, float, float, float, float] | None = None


def _llama3(inv: list[float], s: ScalingSpec) -> tuple[list[float], list[str], RopeBands]:
    old = s.original_max_seq_len
    low_wave, high_wave = old / s.low_freq_factor, old / s.high_freq_factor
    out, bands = [], []
    for f in inv:
        wave = 2 * math.pi / f
        if wave < high_wave:
            out.append(f), bands.append("high")
        elif wave > low_wave:
            out.append(f / s.factor), bands.append("low")
        else:
            smooth = (old / wave - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
            out.append((1 - smooth) * f / s.factor + smooth * f), bands.append("medium")
    return out, bands, RopeBands("llama3", s.factor, old, high_wave, low_wave, None)


def _yarn(inv: list[float], s: ScalingSpec, dim: int, theta: float):
    fast, slow = s.beta_fast or 32.0, s.beta_slow or 1.0

    def correction(rotations: float) -> float:
        return dim * math.log(s.original_max_seq_len / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    low, high = correction(fast), correction(slow)
    if s.truncate is not False:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    out, bands = [], []
    for i, f in enumerate(inv):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        out.append(f / s.factor * ramp + f * (1 - ramp))
        bands.append("high" if ramp == 0 else "low" if ramp == 1 else "medium")
    return out, bands, RopeBands("yarn", s.factor, s.original_max_seq_len, None, None, (low, high))


def rope_table(dim: int, theta: float, scaling: ScalingSpec | None
               ) -> tuple[list[RopePair], RopeBands | None]:
    """Every pair of a `dim`-dim rotation at base `theta`, and the scaling's bands (None
    without scaling)."""
    inv = [theta ** (-(2 * i) / dim) for i in range(dim // 2)]
    if scaling is None:
        scaled, bands, limits = inv, ["none"] * len(inv), None
    elif scaling.kind == "llama3":
        scaled, bands, limits = _llama3(inv, scaling)
    elif scaling.kind == "yarn":
        scaled, bands, limits = _yarn(inv, scaling, dim, theta)
    elif scaling.kind == "longrope":  # as transformers divides: 1 / (factor * theta^(2i/dim))
        short, long = scaling.short_factor, scaling.long_factor
        scaled = [1 / (f * theta ** ((2 * i) / dim)) for i, f in enumerate(long)]
        bands = ["long"] * len(inv)
        limits = RopeBands("longrope", scaling.factor, scaling.original_max_seq_len, None, None,
                           None, (min(short), max(short), min(long), max(long),
                                  scaling.longrope_attention))
    else:  # linear
        scaled, bands = [f / scaling.factor for f in inv], ["all"] * len(inv)
        limits = RopeBands(scaling.kind, scaling.factor, scaling.original_max_seq_len,
                           None, None, None)
    pairs = [RopePair(i, f, 2 * math.pi / f, g, b)
             for i, (f, g, b) in enumerate(zip(inv, scaled, bands))]
    return pairs, limits
