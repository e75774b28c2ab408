"""Cohere 2 MoE (transformers' `cohere2_moe`, Cohere2MoeForCausalLM): refused, naming the
component archscope lacks. Every Cohere2MoeDecoderLayer is a parallel block: one norm's output
feeds attention and the FFN side by side, x + attn(ln(x)) + ffn(ln(x)), where archscope's block
runs them one after the other. (Its norm is a LayerNorm without bias unless rms_norm_eps is set,
and its RoPE rotates adjacent pairs on the sliding layers only.)"""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    raise c.error("model_type", "Cohere2MoeDecoderLayer runs attention and the FFN in parallel "
                                "on one norm's output (x + attn(ln x) + ffn(ln x)); archscope "
                                "has no parallel attention + FFN block")


COHERE2_MOE = LLAMA.but("cohere2_moe", "Cohere2MoeForCausalLM", read=read, weights=(),
                        doc="refused: parallel attention + FFN blocks")
FAMILIES = (COHERE2_MOE,)
