"""MiMo-V2-Flash (transformers' `mimo_v2_flash`, MiMoV2FlashForCausalLM): refused, naming the
component archscope lacks. Its GQA attention projects values to v_head_dim (128) while queries
and keys use head_dim (192), and multiplies the values by attention_value_scale; archscope's GQA
has one head_dim for q, k and v and no value scale. (Also beyond a plain reading: its sliding
layers have twice num_key_value_heads and attention sinks, each layer type its own RoPE base
with partial_rotary_factor 0.334, a sigmoid router without shared experts.)"""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("v_head_dim", "transformers' MiMoV2FlashAttention sizes its value heads by "
                                "v_head_dim apart from head_dim and scales the values by "
                                "attention_value_scale; archscope's GQA attention has one "
                                "head_dim for queries, keys and values and no value scale")


MIMO_V2_FLASH = LLAMA.but("mimo_v2_flash", "MiMoV2FlashForCausalLM", read=read, weights=(),
                          doc="refused: value heads of their own width")
FAMILIES = (MIMO_V2_FLASH,)
