"""Granite (transformers' `granite`): Llama + multipliers (embedding, attention as the softmax
scale, residual, logits)."""

from __future__ import annotations

import math

from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _multipliers
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    return {**read_llama(c), "multipliers": _multipliers(c)}


def write(s: ModelSpec) -> dict:
    m = s.mults
    return {**write_llama(s), "embedding_multiplier": m.embedding,
            "residual_multiplier": m.residual,
            "attention_multiplier": m.attention or 1 / math.sqrt(s.attention.qk_head_dim),
            "logits_scaling": m.logits}


GRANITE = LLAMA.but(
    "granite", "GraniteForCausalLM", read=read, write=write,
    exports=lambda s: s.multipliers is not None, generic=True,
    names=("granite",), spellings={"granite3b": "granite-3b-code"},
    usual={"granite": "granite-3b-code"}, doc="Llama + multipliers")
FAMILIES = (GRANITE,)
