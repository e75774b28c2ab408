"""The spec of a Mamba-1 (selective scan) state mixer: the layer of state-spaces' Mamba,
TII's Falcon-Mamba and AI21's Jamba.

A frozen dataclass whose field names are the YAML keys (DESIGN.md section 2); it checks its own
consistency in `validate`. Only facts are stored; widths are properties.

How transformers 5.24's three mixer classes (MambaMixer, FalconMambaMixer, JambaMambaMixer)
map onto it:

| key | mamba / falcon_mamba | jamba |
|---|---|---|
| d_inner | intermediate_size = expand * hidden_size | mamba_expand * hidden_size |
| d_state | state_size | mamba_d_state |
| dt_rank | time_step_rank ('auto': ceil(hidden_size / 16)) | mamba_dt_rank (the same 'auto') |
| conv_kernel | conv_kernel | mamba_d_conv |
| conv_bias | use_conv_bias | mamba_conv_bias |
| proj_bias | use_bias | mamba_proj_bias |
| dt_bc_norm | none / unweighted (mixer_rms_eps) | weighted (rms_norm_eps) |

Zamba's ZambaMambaMixer is the same mixer split into n_heads (n_mamba_heads) heads of
d_inner / n_heads channels, each with its own x_proj and dt_proj (so B and C are per head);
n_heads: 1 is Mamba's. The parameter counts and FLOPs do not change with n_heads.

dt_proj always has a bias (the step's offset); x_proj never has one. The conv activation is
hidden_act (silu in every published config; this spec has no key for another). The dt init
keys (time_step_min/max/scale/floor/init_scheme) only seed weights and change no forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from archscope.spec.checks import positive, require

# none: Mamba; unweighted: Falcon-Mamba's RMS norms of dt, B and C without a weight (their
# kernel path's dummy weights are buffers of ones, not parameters); weighted: Jamba's, each
# with its own weight (dt_rank, d_state and d_state wide)
DtBcNorm = Literal["none", "unweighted", "weighted"]


@dataclass(frozen=True)
class MambaSpec:
    """One Mamba-1 mixer: in_proj -> (x, z), causal depthwise conv over x, x_proj -> (dt, B, C),
    dt_proj dt_rank -> d_inner, the selective scan with a per-channel A [d_inner, d_state] and
    D, gated by silu(z), out_proj."""

    kind: Literal["mamba1"]
    d_inner: int  # I: the mixer's width (expand * d_model in every family)
    dt_rank: int  # R: the low-rank bottleneck of the step size
    d_state: int = 16  # N: state columns per channel
    conv_kernel: int = 4  # the depthwise conv's taps; the conv state keeps this many columns
    conv_bias: bool = True
    proj_bias: bool = False  # in_proj and out_proj biases
    dt_bc_norm: DtBcNorm = "none"
    dt_bc_norm_eps: float = 1e-6  # the eps of those norms (read only when there are norms)
    n_heads: int = 1  # heads with their own x_proj and dt_proj, d_inner / n_heads channels each

    @property
    def head_dim(self) -> int:
        return self.d_inner // self.n_heads

    def validate(self) -> None:
        positive(self, "d_inner", "dt_rank", "d_state", "conv_kernel", "n_heads")
        require(self.d_inner % self.n_heads == 0, "n_heads",
                f"must divide d_inner ({self.d_inner}), got {self.n_heads}")
        require(self.dt_bc_norm_eps > 0, "dt_bc_norm_eps",
                f"must be positive, got {self.dt_bc_norm_eps}")

    @property
    def conv_dim(self) -> int:
        """Channels of the depthwise conv: x alone (z does not go through it)."""
        return self.d_inner

    @property
    def x_proj_width(self) -> int:
        """x_proj's outputs, in the order they are split: dt (dt_rank), B, C (d_state each)."""
        return self.dt_rank + 2 * self.d_state
