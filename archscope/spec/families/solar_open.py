"""Solar Open (transformers' `solar_open`, SolarOpenForCausalLM): GLM-4.5 without its QK-norm
and without dense layers: Llama's attention with q/k/v bias when attention_bias (never o_proj),
RoPE on whole heads (a partial_rotary_factor other than 1 fails in its class: see read),
and GLM-4.5's MoE (DeepSeek-V3's sigmoid noaux_tc router and shared experts) on every layer.
head_dim is SolarOpenConfig's field (default 128). Read only: GLM-4.5's writer builds the same
network (use_qk_norm false, first_k_dense_replace 0)."""

from __future__ import annotations

from archscope.spec.families.glm4_moe import GLM4_MOE
from archscope.spec.families.glm4_moe import _moe as glm_moe
from archscope.spec.families.minimax_m2 import head_dims
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import PARTIAL, _base, rotary_fraction


def read(c: Keys) -> dict:
    base = _base(c, read_elsewhere=(PARTIAL,))
    if rotary_fraction(c, 1.0) != 1:  # its RoPE table shrinks, its rotation does not
        raise c.error(PARTIAL, "transformers' SolarOpen sizes its RoPE table by this factor "
                               "but rotates whole heads, which fails for any factor but 1")
    heads, kv, head_dim = head_dims(c, base["d_model"])
    return {**base, "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                                  "head_dim": head_dim,
                                  **({"bias": True, "out_bias": False}
                                     if c.flag("attention_bias") else {})},
            "ffn": glm_moe(c)}


SOLAR_OPEN = GLM4_MOE.but(
    "solar_open", "SolarOpenForCausalLM", read=read, ffns=("moe",),
    per_expert=GLM4_MOE.per_expert,
    doc="GLM-4.5 without QK-norm or dense layers")
FAMILIES = (SOLAR_OPEN,)
