"""ERNIE 4.5 (transformers' `ernie4_5`, Ernie4_5ForCausalLM): Llama whose one `use_bias` switch
covers q, k, v, o and the MLP, with RoPE on adjacent pairs (position.interleaved: transformers'
GLM-style rotate_half over cos/sin repeated pairwise, in fp32). Ernie4_5Config defaults head_dim
to 128 and ties the embeddings."""

from __future__ import annotations

from archscope.spec.families._dense import class_head_dim
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    bias = c.flag("use_bias")
    out = class_head_dim(c, read_llama(c, bias=()))
    out = _patch(out, attention={"bias": bias}, ffn={"bias": bias})
    return {**out, "position": {**out["position"], "interleaved": True}}


def write(s: ModelSpec) -> dict:  # one use_bias (the read-back names a spec with two)
    return {**without(write_llama(s), "attention_bias", "mlp_bias"), "use_bias": s.attention.bias}


ERNIE4_5 = LLAMA.but("ernie4_5", "Ernie4_5ForCausalLM", read=read, write=write,
                     exports=lambda s: bool(s.position.interleaved), names=("ernie",),
                     doc="Llama + one bias switch + RoPE on adjacent pairs")
FAMILIES = (ERNIE4_5,)
