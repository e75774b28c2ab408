"""Mistral (transformers' `mistral`): Llama + a sliding window on every layer, no bias
switches."""

from __future__ import annotations

from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    return _patch(read_llama(c, bias=()), attention={"window": c.size("sliding_window", null=True)})


def write(s: ModelSpec) -> dict:
    return {**without(write_llama(s), "attention_bias", "mlp_bias"),
            "sliding_window": s.attention.window}


def windowed(s: ModelSpec) -> bool:
    return any(layer.window for layer in s.plan)


MISTRAL = LLAMA.but("mistral", "MistralForCausalLM", read=read, write=write, exports=windowed,
                    generic=True,
                    names=("mistral",), spellings={"mistral7b": "mistral-7b-v0.1"},
                    usual={"mistral": "mistral-7b-v0.1"}, doc="Llama + a sliding window")
FAMILIES = (MISTRAL,)
