"""Zamba (transformers' models/zamba, ZambaForCausalLM): Mamba-1 layers (a selective scan with
a per-channel state, its time step projected through mamba_dt_rank) and one shared transformer
block. archscope does not build Mamba-1's selective scan yet, so Zamba is declared (archscope
families, show, the reader name what is missing) and refused naming mamba_dt_rank, the key only
a Mamba-1 mixer has. When Mamba-1 is built, this becomes Zamba 2's shared block over it.
"""

from __future__ import annotations

from archscope.spec.families.out_of_reach import refusing
from archscope.spec.families.base import Family

_COMPONENT = ("Zamba's Mamba-1 selective scan (a per-channel state whose time step is "
              "projected through mamba_dt_rank)")

FAMILIES = (
    Family("zamba", "ZambaForCausalLM", read=refusing("mamba_dt_rank", _COMPONENT),
           doc=_COMPONENT),
)
