"""DeepSeek-V2 and -V3 (transformers' deepseek_v2, deepseek_v3; Kimi K2's files too): their
config.json readers and writers. Llama's skeleton + MLA + routed and shared experts after some
dense layers; V3 routes by sigmoid scores with a selection-only correction bias (noaux_tc).

hf_readers registers the readers, hf_export the writers."""

from __future__ import annotations

import dataclasses

from archscope.errors import SpecError
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _base, _divides, _moe, _select, mtp_layers
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec


def _deepseek_moe(c: Keys) -> dict:  # routed experts + always-on shared experts
    moe = _moe(c, experts="n_routed_experts")
    method = c.text("topk_method", ("greedy", "group_limited_greedy"), null=True,
                    noun="routing method") or "greedy"
    router = {"method": method, "normalize": bool(c.flag("norm_topk_prob", null=True)),
              "scaling_factor": c.number("routed_scaling_factor")}
    groups = {key: c.size(key, null=True) for key in ("n_group", "topk_group")}
    if method != "greedy":  # greedy ignores the groups (checked all the same, as transformers')
        router.update({key: c.size(key) for key in groups})
    return {**moe, "bias": c.flag("mlp_bias"), "d_expert": c.size("moe_intermediate_size"),
            "n_shared_experts": c.size("n_shared_experts", least=0), "router": router}


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


def read_deepseek_v3(c: Keys) -> dict:  # DeepSeek-V2 with V3's router, no mlp_bias, every layer
    # from first_k_dense_replace on MoE (DeepseekV3 reads no moe_layer_freq)
    if c.size("moe_layer_freq", fallback=1) != 1:
        raise c.error("moe_layer_freq", "transformers' DeepseekV3 makes every layer from "
                                        "first_k_dense_replace on MoE: only 1 is modelled")
    if c.flag("rope_interleave", fallback=True) is not True:
        raise c.error("rope_interleave", "archscope's MLA rotates interleaved pairs only")
    return {**read_deepseek_v2(c, moe=_deepseek_v3_moe, mlp_bias=False), "mtp_layers": mtp_layers(c)}


def read_deepseek_v2(c: Keys, moe=_deepseek_moe, mlp_bias: bool | None = None) -> dict:
    # Llama's skeleton + MLA + MoE after some dense layers
    base = _base(c)
    heads = c.size("num_attention_heads")
    if c.model_type == "deepseek_v2":  # DeepseekV3Config accepts any width (MLA needs none)
        _divides(c, "hidden_size", "num_attention_heads", base["d_model"], heads)
    mla = {"q_lora_rank": c.size("q_lora_rank", null=True)}
    mla.update({key: c.size(key) for key in ("kv_lora_rank", "qk_nope_head_dim",
                                             "qk_rope_head_dim", "v_head_dim")})
    if mla["qk_rope_head_dim"] % 2:
        raise c.error("qk_rope_head_dim", f"must be even for RoPE, got {mla['qk_rope_head_dim']}")
    out = {**base, "attention": {"kind": "mla", "n_heads": heads,
                                 "bias": c.flag("attention_bias"), **mla}}
    # DeepSeek's rule: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0
    k = c.size("first_k_dense_replace", least=0)
    freq = c.size("moe_layer_freq", fallback=1)  # DeepSeek's own key; transformers has none
    n = base["n_layers"]
    dense = [i for i in range(n) if not (i >= k and i % freq == 0)]
    mlp = {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c),
           **({"bias": True} if (c.flag("mlp_bias") if mlp_bias is None else mlp_bias)
              else {})} if dense else None
    if len(dense) == n:
        return {**out, "ffn": mlp}
    out["ffn"] = moe(c)
    if dense:
        out["layers"] = [{"select": _select(dense), "ffn": mlp}]
    return out


def write_deepseek_v2(s: ModelSpec) -> dict:
    a, first = s.attention, s.plan[0].ffn
    if s.d_model % a.n_heads:  # DeepseekV2Config refuses to load otherwise
        raise SpecError(f"transformers' DeepseekV2Config needs d_model ({s.d_model}) divisible "
                        f"by n_heads ({a.n_heads})", key="attention.n_heads")
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    k = next((layer.index for layer in s.plan if layer.is_moe), s.n_layers)
    out = {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.n_heads,
           "attention_bias": a.bias, **{key: getattr(a, key) for key in a.MLA_KEYS},
           "hidden_act": HF_ACT[(moe or first).activation], "mlp_bias": (moe or first).bias,
           "first_k_dense_replace": k, **({"intermediate_size": first.d_ff} if k else {})}
    if moe is None:
        return out
    r = moe.routing
    if r.normalize:  # the original DeepSeek code honours norm_topk_prob; transformers' port does not
        raise SpecError("transformers' DeepseekV2 never renormalises the top-k weights (it "
                        "ignores norm_topk_prob), so normalize: true would build another model",
                        key="ffn.router.normalize")
    return {**out, "n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.shared_experts,
            "topk_method": r.method, "n_group": r.n_group, "topk_group": r.topk_group,
            "norm_topk_prob": r.normalize, "routed_scaling_factor": r.scaling_factor}


def write_deepseek_v3(s: ModelSpec) -> dict:
    """DeepSeek-V2's keys less those DeepseekV3 has no use for (it always routes noaux_tc with
    sigmoid scores and reads no mlp_bias); an unrepresentable spec is named by the read-back."""
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    first, r = s.plan[0].ffn, (moe.routing if moe else None)
    out = {**write_deepseek_v2(_without_normalize(s)), "rope_interleave": True}
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
