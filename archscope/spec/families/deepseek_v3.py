"""DeepSeek-V3 (transformers' `deepseek_v3`; Kimi K2's files too, model_type kimi_k2 naming
DeepseekV3ForCausalLM): DeepSeek-V2 with V3's router (sigmoid scores, a selection-only
correction bias, noaux_tc), no mlp_bias, every layer from first_k_dense_replace on MoE, and
multi-token-prediction modules the class does not build (num_nextn_predict_layers)."""

from __future__ import annotations

import dataclasses

from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v2 import DEEPSEEK_V2, mla
from archscope.spec.families.deepseek_v2 import read as read_v2
from archscope.spec.families.deepseek_v2 import write as write_v2
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _moe, mtp_layers
from archscope.spec.hf_writers_base import HF_ACT
from archscope.spec.schema import ModelSpec


def _deepseek_v3_moe(c: Keys) -> dict:  # V2's experts, a sigmoid noaux_tc router
    # DeepseekV3TopkRouter always routes this way; DeepSeek's own keys may only agree
    c.text("topk_method", ("noaux_tc",), null=True, noun="routing method")
    c.text("scoring_func", ("sigmoid",), null=True, noun="scoring function")
    router = {"method": "noaux_tc", "scoring": "sigmoid", "correction_bias": True,
              "normalize": bool(c.flag("norm_topk_prob", null=True)),
              "scaling_factor": c.number("routed_scaling_factor"),
              "n_group": c.size("n_group"), "topk_group": c.size("topk_group")}
    return {**_moe(c, experts="n_routed_experts"), "d_expert": c.size("moe_intermediate_size"),
            "n_shared_experts": c.size("n_shared_experts", least=0), "router": router}


def read(c: Keys) -> dict:  # DeepSeek-V2 with V3's router, no mlp_bias, every layer
    # from first_k_dense_replace on MoE (DeepseekV3 reads no moe_layer_freq)
    if c.size("moe_layer_freq", fallback=1) != 1:
        raise c.error("moe_layer_freq", "transformers' DeepseekV3 makes every layer from "
                                        "first_k_dense_replace on MoE: only 1 is modelled")
    if c.flag("rope_interleave", fallback=True) is not True:
        raise c.error("rope_interleave", "archscope's MLA rotates interleaved pairs only")
    return {**read_v2(c, moe=_deepseek_v3_moe, mlp_bias=False, refused_by=None),
            "mtp_layers": mtp_layers(c)}


def write(s: ModelSpec) -> dict:
    """DeepSeek-V2's keys less those DeepseekV3 has no use for (it always routes noaux_tc with
    sigmoid scores and reads no mlp_bias); an unrepresentable spec is named by the read-back."""
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    first, r = s.plan[0].ffn, (moe.routing if moe else None)
    out = {**write_v2(_without_normalize(s), divisible=False), "rope_interleave": True}
    for key in ("mlp_bias", "topk_method"):
        out.pop(key, None)
    if moe is not None:
        out.update({"norm_topk_prob": r.normalize, "scoring_func": "sigmoid",
                    "topk_method": "noaux_tc"})
    out["hidden_act"] = HF_ACT[(moe or first).activation]
    out["num_nextn_predict_layers"] = s.mtp_layers  # not built by the class; counted apart
    return out


def _without_normalize(s: ModelSpec) -> ModelSpec:
    """`s` with normalize off (V2's writer refuses it; V3 honours it), else unchanged."""
    if not any(layer.is_moe and layer.ffn.routing.normalize for layer in s.plan):
        return s
    router = dataclasses.replace(s.ffn.routing, normalize=False)
    return dataclasses.replace(s, ffn=dataclasses.replace(s.ffn, router=router))


def sigmoid_routed(s: ModelSpec) -> bool:
    """Whether some MoE routes by sigmoid scores or noaux_tc: DeepSeek-V3's router (GLM-4.5's
    is the same, over GQA attention)."""
    return any(layer.is_moe and (layer.ffn.routing.method == "noaux_tc"
                                 or layer.ffn.routing.scoring == "sigmoid") for layer in s.plan)


DEEPSEEK_V3 = DEEPSEEK_V2.but(
    "deepseek_v3", "DeepseekV3ForCausalLM", read=read, write=write,
    exports=lambda s: mla(s) and sigmoid_routed(s), attentions=("mla",),
    ffns=("moe", "swiglu"),
    weights=DEEPSEEK_V2.weights + rules(("model.layers.{i}.mlp.gate.e_score_correction_bias",
                                         "layers.{i}.mlp.gate.e_score_correction_bias")),
    per_expert=DEEPSEEK_V2.per_expert,
    spec_keys=DEEPSEEK_V2.key_table(**{
        "ffn.bias": "mlp_bias", "ffn.router.method": "topk_method",
        "ffn.router.scoring": "scoring_func", "ffn.router.correction_bias": "topk_method",
        "mtp_layers": "num_nextn_predict_layers"}),
    names=("deepseek",), doc="DeepSeek-V2 + a sigmoid noaux_tc router + MTP modules")
# Kimi K2's files: model_type kimi_k2, which transformers does not register, naming
# DeepseekV3ForCausalLM: read with DeepSeek-V3's class, defaults and weight names
KIMI_K2 = DEEPSEEK_V3.but("kimi_k2", "DeepseekV3ForCausalLM", read=read,
                          class_of="deepseek_v3", names=("kimi",),
                          doc="DeepSeek-V3's class, Moonshot's files")
FAMILIES = (DEEPSEEK_V3, KIMI_K2)
