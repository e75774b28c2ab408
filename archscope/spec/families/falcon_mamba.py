"""Falcon-Mamba (transformers' `falcon_mamba`, FalconMambaForCausalLM) config.json <-> spec.

Falcon-Mamba = Mamba (families/mamba.py: the same keys, blocks and weight names) + RMS norms
of dt, B and C inside the mixer, after x_proj and before dt_proj and the scan, WITHOUT weights
(FalconMambaWeightlessRMSNorm: x / rms(x), computed in fp32; the ones it keeps for the fused
kernels are non-persistent buffers, in no checkpoint), with eps mixer_rms_eps: the mixer's
dt_bc_norm unweighted, dt_bc_norm_eps mixer_rms_eps. Its final norm is Llama's RMSNorm, the
same as Mamba's. use_falcon_mambapy is the older spelling of use_mambapy (an implementation
choice): not read.
"""

from __future__ import annotations

from archscope.spec.families.mamba import MAMBA, mixer, only_mamba_blocks
from archscope.spec.families.mamba import read as read_mamba
from archscope.spec.families.mamba import write as write_mamba
from archscope.spec.hf_keys import Keys
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    out = read_mamba(c)
    out["mixer"] = {**mixer(c, out["d_model"]), "dt_bc_norm": "unweighted",
                    "dt_bc_norm_eps": c.number("mixer_rms_eps")}
    return out


def write(s: ModelSpec) -> dict:
    return {**write_mamba(s, "unweighted", "FalconMamba"),
            "mixer_rms_eps": s.mixer.dt_bc_norm_eps}


FALCON_MAMBA = MAMBA.but(
    "falcon_mamba", "FalconMambaForCausalLM", read=read, write=write,
    exports=lambda s: only_mamba_blocks(s, "unweighted"),
    spec_keys=MAMBA.key_table(**{"mixer.dt_bc_norm_eps": "mixer_rms_eps"}),
    doc="Mamba + weightless RMS norms of dt, B and C (mixer_rms_eps)")
FAMILIES = (FALCON_MAMBA,)
