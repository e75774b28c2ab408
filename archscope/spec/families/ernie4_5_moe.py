"""ERNIE 4.5 MoE (transformers' `ernie4_5_moe`, Ernie4_5_MoeForCausalLM): refused, naming the
one part archscope cannot count.

Everything else has a spec: Llama's block with use_bias on q/k/v/o and the dense MLP, RoPE on
adjacent pairs (position.interleaved), MoE on layer i when (i + 1) % moe_layer_interval == 0 and
moe_layer_start_index <= i <= moe_layer_end_index, moe_num_shared_experts shared experts of
moe_intermediate_size, and a router that chooses by softmax scores + a selection-only bias and
weighs by the unbiased scores renormalised (noaux_tc with one group, softmax scoring). But that
bias (moe_statics.e_score_correction_bias, [1, num_experts] per MoE layer) is an nn.Parameter
in transformers' class, counted among its parameters, where archscope's correction bias is a
buffer as in DeepSeek-V3: the parameter count would be short by num_experts per MoE layer.
"""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("moe_num_experts", "transformers' Ernie4_5_Moe keeps its router's selection "
                                     "bias (moe_statics.e_score_correction_bias, one per expert "
                                     "and MoE layer) as a parameter, which it counts; archscope "
                                     "holds a correction bias as a buffer (DeepSeek-V3's) and "
                                     "has no parameter form of it")


ERNIE4_5_MOE = LLAMA.but("ernie4_5_moe", "Ernie4_5_MoeForCausalLM", read=read, weights=(),
                         doc="refused: its router's bias is a parameter")
FAMILIES = (ERNIE4_5_MOE,)
