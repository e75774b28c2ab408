"""GLM-4-0414 (transformers' `glm4`, Glm4ForCausalLM; modular: GLM's attention, Phi-3's MLP):
GLM + a norm after each sublayer as well as before it (norm.position sandwich, plain RMSNorm):
x + post_self_attn_layernorm(attn(input_layernorm(x))), then
x + post_mlp_layernorm(mlp(post_attention_layernorm(x))). Glm4's post_attention_layernorm is the
norm BEFORE the MLP (archscope's pre_feedforward_layernorm); its post_self_attn_layernorm is
archscope's post_attention_layernorm."""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.glm import GLM, partial_pairs
from archscope.spec.families.glm import read as read_glm
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch


def read(c: Keys) -> dict:
    return _patch(read_glm(c), norm={"position": "sandwich"})


_LAYER = "model.layers.{i}"
# GLM's names less its post_attention_layernorm, which Glm4 puts before the MLP
WEIGHTS = tuple(r for r in GLM.weights if "post_attention_layernorm" not in r.hf) + rules(
    (f"{_LAYER}.post_self_attn_layernorm.{{p}}", "layers.{i}.post_attention_layernorm.{p}"),
    (f"{_LAYER}.post_attention_layernorm.{{p}}", "layers.{i}.pre_feedforward_layernorm.{p}"),
    (f"{_LAYER}.post_mlp_layernorm.{{p}}", "layers.{i}.post_feedforward_layernorm.{p}"))
GLM4 = GLM.but(
    "glm4", "Glm4ForCausalLM", read=read, write=GLM.write,
    exports=lambda s: (partial_pairs(s) and s.norm.position == "sandwich"
                       and not s.norm.unit_offset),
    weights=WEIGHTS, names=("glm",), doc="GLM + a norm after each sublayer (sandwich)")
FAMILIES = (GLM4,)
