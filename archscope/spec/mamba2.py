"""The spec of a Mamba-2 (SSD) state mixer: the layer Granite 4.0-H, Nemotron-H and Bamba put
where attention would be.

A frozen dataclass whose field names are the YAML keys (DESIGN.md section 2); it checks its own
consistency in `validate`. Only facts are stored; widths are properties.

(Mamba2ForCausalLM's and Falcon-H1's keys: their family modules, spec/families/mamba2.py and
falcon_h1.py.) How transformers 5.23's three mixer classes map onto it (they run the same torch path; they
differ only in which config keys they read):

| key | granitemoehybrid / bamba | nemotron_h |
|---|---|---|
| n_heads | mamba_n_heads | mamba_num_heads |
| head_dim | mamba_d_head ('auto': mamba_expand * hidden_size / mamba_n_heads) | mamba_head_dim |
| d_state | mamba_d_state | ssm_state_size |
| n_groups | mamba_n_groups | n_groups |
| conv_kernel | mamba_d_conv | conv_kernel |
| chunk_size | mamba_chunk_size | chunk_size |
| conv_bias | mamba_conv_bias | use_conv_bias |
| proj_bias | mamba_proj_bias | use_bias (its mamba_proj_bias is read by no module) |
| dt_limit_min, dt_limit_max | time_step_limit (lo, hi; inf -> null) | time_step_min, null (*) |

(*) Nemotron-H's mixer clamps at (time_step_min, inf); its config's time_step_limit is read by
no module.

The mixer's width is n_heads * head_dim. Granite and Bamba require it to equal
mamba_expand * hidden_size; Nemotron-H does not (its `expand` sizes nothing in the mixer), so
`expand` is not a key. The gated norm uses the model's norm eps (rms_norm_eps, Nemotron-H's
layer_norm_epsilon). The conv activation is SiLU (hidden_act / mamba_hidden_act, silu in all
three families' configs; an importer should refuse another: this spec has no key for it).
Nemotron-H's time_step_max and time_step_floor only seed the initial dt_bias, and its
mamba_ssm_cache_dtype is read by no module (the SSM state is fp32 either way): none changes a
forward pass, so none is a key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import positive, require


@dataclass(frozen=True)
class Mamba2Spec:
    """One Mamba-2 mixer: in_proj -> (z, x, B, C, dt), causal depthwise conv over (x, B, C),
    the selective scan with per-head A, D and dt_bias and B/C shared by groups of heads,
    a gated RMSNorm, out_proj."""

    kind: Literal["mamba2"]
    n_heads: int
    head_dim: int  # P: channels per head
    d_state: int  # N: state columns per head
    # B and C are projected once per group and shared by the group's n_heads / n_groups heads;
    # the gated norm also normalises per group (transformers' group_size = width / n_groups)
    n_groups: int = 1
    conv_kernel: int = 4  # the depthwise conv's taps; the conv state keeps this many columns
    # tokens per block of the chunked scan: it changes prefill's FLOPs (and rounding), not results
    chunk_size: int = 256
    conv_bias: bool = True
    proj_bias: bool = False  # in_proj and out_proj biases
    # dt = softplus(dt + dt_bias) is clamped to [dt_limit_min, dt_limit_max] in the chunked scan
    # (prefill). transformers' one-step recurrence (decode) applies no clamp, and neither do we:
    # the same weights then give the same outputs as transformers step for step. null: no
    # upper bound (config.json's inf).
    dt_limit_min: float = 0.0
    dt_limit_max: float | None = None
    # false (all three families): gate first, y * silu(z), then normalise; true: normalise,
    # then gate (mamba_ssm's RMSNormGated option)
    norm_before_gate: bool = False
    # false: no gated norm at all, y * silu(z) goes to out_proj (Falcon-H1's mamba_rms_norm
    # false; mamba_ssm's rmsnorm=False): the mixer has no norm weight
    gated_norm: bool = True
    # Falcon-H1's µP vector (ssm_multipliers): in_proj's five outputs z, x, B, C, dt are
    # multiplied by these, each over its own width, before anything reads them; null: all 1
    proj_multipliers: tuple[float, ...] | None = None

    def validate(self) -> None:
        positive(self, "n_heads", "head_dim", "d_state", "n_groups", "conv_kernel", "chunk_size")
        require(self.n_heads % self.n_groups == 0, "n_groups",
                f"n_heads ({self.n_heads}) must be a multiple of n_groups ({self.n_groups}): "
                "each group's B and C serve a whole number of heads")
        require(self.dt_limit_min >= 0, "dt_limit_min",
                f"dt is a softplus, never negative: the lower clamp must be >= 0, "
                f"got {self.dt_limit_min}")
        if self.proj_multipliers is not None:
            require(len(self.proj_multipliers) == 5 and all(v > 0 for v in self.proj_multipliers),
                    "proj_multipliers",
                    "five positive numbers, one per in_proj output (z, x, B, C, dt), "
                    f"got {self.proj_multipliers!r}")
        if self.dt_limit_max is not None:
            require(self.dt_limit_max > self.dt_limit_min, "dt_limit_max",
                    f"must be above dt_limit_min ({self.dt_limit_min}), got {self.dt_limit_max} "
                    "(null for no upper bound)")

    @property
    def d_inner(self) -> int:
        """The mixer's width: x, z, y and the gated norm (Granite: mamba_expand * hidden_size)."""
        return self.n_heads * self.head_dim

    @property
    def heads_per_group(self) -> int:
        return self.n_heads // self.n_groups

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv: x, B and C go through it; z and dt do not."""
        return self.d_inner + 2 * self.n_groups * self.d_state

    @property
    def in_proj_width(self) -> int:
        """in_proj's outputs, in the order they are split: z, x, B, C, dt (one per head)."""
        return self.d_inner + self.conv_dim + self.n_heads

    @property
    def proj_widths(self) -> tuple[int, int, int, int, int]:
        """Widths of in_proj's outputs z, x, B, C, dt (what proj_multipliers scale)."""
        gn = self.n_groups * self.d_state
        return (self.d_inner, self.d_inner, gn, gn, self.n_heads)

    @property
    def norm_group_size(self) -> int:
        """Values each RMS of the gated norm is taken over."""
        return self.d_inner // self.n_groups
