"""Seed-OSS (transformers' `seed_oss`, SeedOssForCausalLM): Llama whose o_proj bias has its own
switch (attention_bias covers q, k and v; attention_out_bias o_proj), with mlp_bias; its
dropouts are off in inference. SeedOssConfig defaults head_dim to 128."""

from __future__ import annotations

from archscope.spec.families._dense import class_head_dim
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    return _patch(class_head_dim(c, read_llama(c)),
                  attention={"out_bias": c.flag("attention_out_bias")})


def write(s: ModelSpec) -> dict:
    return {**write_llama(s), "attention_out_bias": s.attention.has_out_bias}


def _own_biases(s: ModelSpec) -> bool:
    """An o_proj bias unlike q/k/v's with an MLP bias: only Seed-OSS's switches say both (Qwen2
    writes the first without the second)."""
    return s.attention.bias != s.attention.has_out_bias and s.ffn.bias


SEED_OSS = LLAMA.but(
    "seed_oss", "SeedOssForCausalLM", read=read, write=write, exports=_own_biases,
    # no document word: "seed" is too common a word in LLM texts (a random seed) to name it
    spec_keys=LLAMA.key_table(**{"attention.out_bias": "attention_out_bias"}),
    doc="Llama + a separate o_proj bias switch")
FAMILIES = (SEED_OSS,)
