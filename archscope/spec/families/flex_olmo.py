"""FlexOlmo (transformers' `flex_olmo`, FlexOlmoForCausalLM): OLMo 2's block (full-width
QK-norm, each sublayer's output normed, no input norm) with OLMoE's MoE on every layer (softmax
top-k, renormalised only when norm_topk_prob). Its config keys are OLMoE's, less clip_qkv.
Published checkpoints keep one tensor per expert."""

from __future__ import annotations

from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.olmo2 import OLMO2
from archscope.spec.families.olmoe import OLMOE, full_norm_moe, full_width_heads, moe
from archscope.spec.families.olmoe import write as write_olmoe
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    out = _patch(read_llama(c, bias=("attention_bias",)), norm={"position": "output"},
                 attention={"qk_norm": "full"}, ffn=moe(c))
    full_width_heads(c, out)
    return out


def write(s: ModelSpec) -> dict:
    return without(write_olmoe(s), "clip_qkv")


FLEX_OLMO = OLMOE.but(
    "flex_olmo", "FlexOlmoForCausalLM", read=read, write=write,
    exports=lambda s: full_norm_moe(s) and s.norm.position == "output", ffns=("moe",),
    weights=OLMO2.weights + MOE_WEIGHTS, per_expert=PER_EXPERT,
    names=("olmo",), doc="OLMo 2 + OLMoE's MoE")
FAMILIES = (FLEX_OLMO,)
