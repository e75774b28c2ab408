"""Position quantities for claims: RoPE base, scaling and frequencies, read off the spec."""

from __future__ import annotations

from archscope.claims.quantities.registry import quantity
from archscope.errors import InputError


def _rope(spec):
    if spec.position.kind != "rope":
        raise InputError(f"{spec.name} has no RoPE (position.kind {spec.position.kind})")
    return spec.position


def _scaling(spec):
    scaling = _rope(spec).scaling
    if scaling is None:
        raise InputError(f"{spec.name} has no RoPE scaling")
    return scaling


@quantity("rope_theta", "number")
def rope_theta(spec):
    """RoPE base."""
    return _rope(spec).theta


@quantity("rope_scaling_factor", "number")
def rope_scaling_factor(spec):
    """RoPE scaling factor."""
    return _scaling(spec).factor


@quantity("rope_original_max_seq_len", "count")
def rope_original_max_seq_len(spec):
    """The context the RoPE scaling starts from."""
    return _scaling(spec).original_max_seq_len


@quantity("rope_low_freq_factor", "number")
def rope_low_freq_factor(spec):
    """Llama 3 scaling: low_freq_factor."""
    return _scaling(spec).low_freq_factor


@quantity("rope_high_freq_factor", "number")
def rope_high_freq_factor(spec):
    """Llama 3 scaling: high_freq_factor."""
    return _scaling(spec).high_freq_factor


@quantity("rope_low_freq_wavelen", "number")
def rope_low_freq_wavelen(spec):
    """Llama 3 scaling: wavelengths above original_max_seq_len / low_freq_factor are scaled."""
    s = _scaling(spec)
    return s.original_max_seq_len / s.low_freq_factor


@quantity("rope_high_freq_wavelen", "number")
def rope_high_freq_wavelen(spec):
    """Llama 3 scaling: wavelengths below original_max_seq_len / high_freq_factor are kept."""
    s = _scaling(spec)
    return s.original_max_seq_len / s.high_freq_factor


@quantity("rope_context_extension", "ratio")
def rope_context_extension(spec):
    """max_seq_len / the scaling's original_max_seq_len (how far the scaling stretches)."""
    return spec.max_seq_len / _scaling(spec).original_max_seq_len


def _rope_dim(spec):
    return spec.attention.rotary_dim


@quantity("rope_pairs", "count")
def rope_pairs(spec):
    """Rotated 2-D pairs per head: the rotary dims / 2."""
    _rope(spec)
    return _rope_dim(spec) // 2


@quantity("rope_inv_freq", "number")
def rope_inv_freq(spec, index):
    """theta_i = theta^(-2i/d) for pair i, before any scaling (RoFormer's formula)."""
    d = _rope_dim(spec)
    if not 0 <= index < d // 2:
        raise InputError(f"rope pair index {index} is outside 0..{d // 2 - 1}")
    return _rope(spec).theta ** (-2 * index / d)
