"""GLM-4.7-Flash (transformers' `glm4_moe_lite`, Glm4MoeLiteForCausalLM): DeepSeek-V3's model
(MLA with interleaved RoPE on qk_rope_head_dim, the sigmoid noaux_tc router and shared experts)
whose MoE layers are those mlp_layer_types marks "sparse" (absent: every layer but the first).
Glm4MoeLiteConfig has no first_k_dense_replace, moe_layer_freq or MTP key: the published
file's first_k_dense_replace is not read, and num_nextn_predict_layers (the MTP layer stored as
model.layers.<n>) is read when the file has it. Read only: DeepSeek-V3's writer builds the same
network when the dense layers come first."""

from __future__ import annotations

from archscope.spec.families.deepseek_v2 import read as read_v2
from archscope.spec.families.deepseek_v3 import DEEPSEEK_V3, _deepseek_v3_moe
from archscope.spec.families.exaone_moe import dense_layers
from archscope.spec.hf_keys import Keys


def read(c: Keys) -> dict:
    if c.flag("rope_interleave") is not True:
        raise c.error("rope_interleave", "archscope's MLA rotates interleaved pairs only")
    out = read_v2(c, moe=_deepseek_v3_moe, mlp_bias=False, refused_by=None,
                  dense_layers=lambda keys, n: dense_layers(keys, n, first=1))
    mtp = c.alias("num_nextn_predict_layers", "num_mtp_layers")
    return {**out, "mtp_layers": c.size(mtp, least=0, fallback=0)}


GLM4_MOE_LITE = DEEPSEEK_V3.but(
    "glm4_moe_lite", "Glm4MoeLiteForCausalLM", read=read, attentions=("mla",),
    ffns=("moe", "swiglu"), per_expert=DEEPSEEK_V3.per_expert,
    spec_keys=DEEPSEEK_V3.key_table(layers="mlp_layer_types"), names=("glm",),
    doc="DeepSeek-V3 with its MoE layers picked by mlp_layer_types")
FAMILIES = (GLM4_MOE_LITE,)
