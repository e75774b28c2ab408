"""OLMo 2 (transformers' `olmo2`): Llama + full-width QK-norm + each sublayer's output normed
(post_attention_layernorm, the name Llama uses for the FFN's input norm, and
post_feedforward_layernorm), with no input_layernorm."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.families.qwen3 import QK_NORM_WEIGHTS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    return _patch(read_llama(c, bias=("attention_bias",)), norm={"position": "output"},
                  attention={"qk_norm": "full"})


def write(s: ModelSpec) -> dict:  # Llama's keys; the norms are implied by the class
    return without(write_llama(s), "mlp_bias")


OLMO2 = LLAMA.but(
    "olmo2", "Olmo2ForCausalLM", read=read, write=write,
    exports=lambda s: s.norm.position == "output" or s.attention.qk_norm == "full",
    weights=tuple(r for r in LLAMA.weights if ".input_layernorm." not in r.hf)
    + QK_NORM_WEIGHTS + rules(("model.layers.{i}.post_feedforward_layernorm.weight",
                               "layers.{i}.post_feedforward_layernorm.weight")),
    names=("olmo",), doc="Llama + full-width QK-norm + output norms")
FAMILIES = (OLMO2,)
