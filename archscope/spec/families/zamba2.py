"""Zamba 2 (transformers' models/zamba2, Zamba2ForCausalLM): Mamba-2 layers, and at the hybrid
layers (layers_block_type) a shared transformer block (attention + MLP over concat(hidden,
embeddings), num_mem_blocks copies used in turn, with per-use LoRA adapters and a per-use
linear back into the Mamba stream). archscope builds the Mamba-2 layers but not the shared
block yet, so Zamba 2 is declared and refused naming num_mem_blocks and that block.
"""

from __future__ import annotations

from archscope.spec.families.base import Family
from archscope.spec.families.out_of_reach import refusing

_COMPONENT = ("Zamba 2's shared transformer block (num_mem_blocks attention + MLP blocks over "
              "concat(hidden, embeddings), reused at every hybrid layer with per-use adapters)")

FAMILIES = (
    Family("zamba2", "Zamba2ForCausalLM", read=refusing("num_mem_blocks", _COMPONENT),
           doc=_COMPONENT),
)
