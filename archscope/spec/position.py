"""The spec's position: learned, none, or RoPE with its frequency scaling (llama3, yarn, linear,
longrope). Frozen dataclasses whose field names are the YAML keys, as in `components`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from archscope.errors import SpecError
from archscope.spec.checks import absent_unless, one_spelling, positive, require

PositionKind = Literal["learned", "rope", "none"]
ScalingKind = Literal["llama3", "yarn", "linear", "longrope"]


@dataclass(frozen=True)
class ScalingSpec:
    """RoPE frequency scaling. Field names follow HF's `rope_scaling` / `rope_parameters`."""

    kind: ScalingKind
    factor: float
    original_max_seq_len: int | None = None  # HF original_max_position_embeddings
    low_freq_factor: float | None = None  # llama3
    high_freq_factor: float | None = None  # llama3
    beta_fast: float | None = None  # yarn
    beta_slow: float | None = None  # yarn
    mscale: float | None = None  # yarn (DeepSeek)
    mscale_all_dim: float | None = None  # yarn (DeepSeek)
    # yarn: round the correction range out to whole dimensions (floor/ceil). null: true, as
    # transformers' default; gpt-oss sets false (the fractional range, unrounded)
    truncate: bool | None = None
    # longrope (Phi-3): each pair's frequency divided by its short factor, or by its long one
    # in a forward whose last position is past original_max_seq_len; cos and sin times
    # attention_factor (null: sqrt(1 + ln factor / ln original_max_seq_len) for factor > 1)
    short_factor: tuple[float, ...] | None = None
    long_factor: tuple[float, ...] | None = None
    attention_factor: float | None = None

    def validate(self) -> None:
        positive(self, "factor", "original_max_seq_len", "low_freq_factor", "high_freq_factor",
                 "attention_factor")
        if self.kind == "longrope":
            for name in ("original_max_seq_len", "short_factor", "long_factor"):
                require(getattr(self, name) is not None, name, "required for longrope scaling")
            for name in ("short_factor", "long_factor"):
                require(all(f > 0 for f in getattr(self, name)), name,
                        "every entry must be positive (a pair's frequency is divided by it)")
            require(self.original_max_seq_len > 1 or self.attention_factor is not None
                    or self.factor <= 1, "original_max_seq_len", "must be over 1: longrope's "
                    "default attention_factor divides by its log (or set attention_factor)")
        else:
            absent_unless(self, "kind", "longrope", "short_factor", "long_factor",
                          "attention_factor")
        if self.kind == "llama3":
            for name in ("original_max_seq_len", "low_freq_factor", "high_freq_factor"):
                require(getattr(self, name) is not None, name, "required for llama3 scaling")
            require(self.high_freq_factor > self.low_freq_factor, "high_freq_factor",
                    "must be larger than low_freq_factor")
        if self.kind == "yarn":
            require(self.original_max_seq_len is not None, "original_max_seq_len",
                    "required for yarn scaling")
        if self.kind != "yarn":
            for name in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "truncate"):
                absent_unless(self, "kind", "yarn", name)
        if self.kind != "llama3":
            absent_unless(self, "kind", "llama3", "low_freq_factor", "high_freq_factor")

    @property
    def longrope_attention(self) -> float:
        """longrope's factor on cos and sin, as transformers' _compute_longrope_parameters."""
        if self.attention_factor is not None or self.factor <= 1:
            return self.attention_factor or 1.0
        return math.sqrt(1 + math.log(self.factor) / math.log(self.original_max_seq_len))


@dataclass(frozen=True)
class PositionSpec:
    kind: PositionKind
    theta: float | None = None
    scaling: ScalingSpec | None = None
    # true: RoPE rotates adjacent pairs (x0, x1), (x2, x3), ... (Llama 4's complex product);
    # null or false: the pairs (x_i, x_{i+dim/2}) of Llama's rotate_half. MLA's decoupled key
    # always rotates adjacent pairs, whatever this says.
    interleaved: bool | None = None
    # true: each pair turns by -position * frequency, the other way round (nanochat's
    # rotate_half with its signs flipped: x * cos - rotate_half(x) * sin). q.k then sees the
    # relative position negated, a different network. null or false: Llama's direction
    reversed: bool | None = None

    def __post_init__(self) -> None:
        one_spelling(self, "interleaved")
        one_spelling(self, "reversed")

    def validate(self) -> None:
        if self.kind == "rope":
            require(self.theta is not None, "theta", "required when kind is 'rope'")
            positive(self, "theta")
        else:
            absent_unless(self, "kind", "rope", "theta", "scaling", "interleaved", "reversed")

    def check_pairs(self, pairs: int) -> None:
        """longrope: one short and one long factor per rotated pair (`pairs`: rotary_dim / 2),
        as transformers' Phi3Config requires."""
        s = self.scaling
        for name in ("short_factor", "long_factor") if s and s.kind == "longrope" else ():
            if len(getattr(s, name)) != pairs:
                raise SpecError(f"has {len(getattr(s, name))} entries, but RoPE rotates {pairs} "
                                "pairs per head (one factor each)", key=f"position.scaling.{name}")
