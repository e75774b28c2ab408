"""DeepSeek-V2 (transformers' `deepseek_v2`): Llama's skeleton + MLA (a compressed KV latent
and a decoupled RoPE key) + routed and always-on shared experts after some dense layers
(first_k_dense_replace; DeepSeek's own moe_layer_freq), routed greedily or group-limited."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import frozen, rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.mixtral import DOWN, GATE_UP, MOE_WEIGHTS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _base, _divides, _moe, _select
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


def read(c: Keys, moe=_deepseek_moe, mlp_bias: bool | None = None,
         refused_by: str | None = "DeepseekV2Config", dense_layers=None) -> dict:
    """Llama's skeleton + MLA + MoE after some dense layers; `refused_by`: the config class
    that refuses heads not dividing the width (V3's accepts them: MLA's heads are sized by
    their own keys); `dense_layers`: (c, n) -> the dense layers, where a class derived from
    DeepSeek's picks them its own way (GLM-4.7-Flash's mlp_layer_types)."""
    base = _base(c)
    heads = c.size("num_attention_heads")
    if refused_by is not None:
        _divides(c, "hidden_size", "num_attention_heads", base["d_model"], heads, refused_by)
    mla = {"q_lora_rank": c.size("q_lora_rank", null=True)}
    mla.update({key: c.size(key) for key in ("kv_lora_rank", "qk_nope_head_dim",
                                             "qk_rope_head_dim", "v_head_dim")})
    if mla["qk_rope_head_dim"] % 2:
        raise c.error("qk_rope_head_dim", f"must be even for RoPE, got {mla['qk_rope_head_dim']}")
    out = {**base, "attention": {"kind": "mla", "n_heads": heads,
                                 "bias": c.flag("attention_bias"), **mla}}
    # DeepSeek's rule: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0
    n = base["n_layers"]
    if dense_layers is not None:
        dense = dense_layers(c, n)
    else:
        k = c.size("first_k_dense_replace", least=0)
        freq = c.size("moe_layer_freq", fallback=1)  # DeepSeek's own key; transformers has none
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


def write(s: ModelSpec, divisible: bool = True) -> dict:
    """DeepseekV2Config's keys for `s` (`divisible`: refuse heads that do not divide d_model,
    as that class does; V3's writer, whose class does not, says False)."""
    a, first = s.attention, s.plan[0].ffn
    if divisible and s.d_model % a.n_heads:  # DeepseekV2Config refuses to load otherwise
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
    if r.normalize:  # DeepSeek's own code honours norm_topk_prob; transformers' port does not
        raise SpecError("transformers' DeepseekV2 never renormalises the top-k weights (it "
                        "ignores norm_topk_prob), so normalize: true would build another model",
                        key="ffn.router.normalize")
    return {**out, **routed_keys(moe), "topk_method": r.method}


def routed_keys(moe) -> dict:
    """DeepSeek's MoE keys for an FFN spec of kind moe (its descendants write them alike)."""
    r = moe.routing
    return {"n_routed_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
            "moe_intermediate_size": moe.d_expert, "n_shared_experts": moe.shared_experts,
            "n_group": r.n_group, "topk_group": r.topk_group, "norm_topk_prob": r.normalize,
            "routed_scaling_factor": r.scaling_factor}



_ATTN = "model.layers.{i}.self_attn"
_MLA = ("q_proj", "q_a_proj", "q_a_layernorm", "q_b_proj", "kv_a_proj_with_mqa", "kv_a_layernorm",
        "kv_b_proj", "o_proj")
# Llama's norms and embeddings + MLA's projections + Mixtral's MoE names + shared experts; dense
# layers use Llama's mlp names
WEIGHTS = tuple(r for r in LLAMA.weights if ".self_attn." not in r.hf) + MOE_WEIGHTS + rules(
    *[(f"{_ATTN}.{name}.{{p}}", f"layers.{{i}}.self_attn.{name}.{{p}}") for name in _MLA],
    *[(f"model.layers.{{i}}.mlp.shared_experts.{proj}.{{p}}",
       f"layers.{{i}}.mlp.shared_experts.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")],
)
# a checkpoint with one tensor per expert and projection (DeepSeek's, GLM's and Qwen's files,
# and what transformers < 5 saved): (per-expert name, fused name, which half of its rows, halves)
PER_EXPERT = (("model.layers.{i}.mlp.experts.{j}.gate_proj.weight", GATE_UP, 0, 2),
              ("model.layers.{i}.mlp.experts.{j}.up_proj.weight", GATE_UP, 1, 2),
              ("model.layers.{i}.mlp.experts.{j}.down_proj.weight", DOWN, 0, 1))

SPEC_KEYS = LLAMA.key_table(**{
    "ffn.n_experts": "n_routed_experts", "ffn.d_expert": "moe_intermediate_size",
    "ffn.n_shared_experts": "n_shared_experts", "ffn.router.method": "topk_method",
    "ffn.router.n_group": "n_group", "ffn.router.topk_group": "topk_group",
    "ffn.router.normalize": "norm_topk_prob", "ffn.router.scaling_factor": "routed_scaling_factor",
    "layers": "first_k_dense_replace",
    **{f"attention.{k}": k for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
                                     "qk_rope_head_dim", "v_head_dim")}})


def mla(s: ModelSpec) -> bool:
    return any(layer.attention is not None and layer.attention.kind == "mla" for layer in s.plan)


DEEPSEEK_V2 = LLAMA.but(
    "deepseek_v2", "DeepseekV2ForCausalLM", read=read, write=write,
    exports=mla, attentions=("mla",), ffns=("moe", "swiglu"),
    weights=WEIGHTS, per_expert=PER_EXPERT, spec_keys=SPEC_KEYS, names=("deepseek",),
    # transformers' default has num_experts_per_tok None: its MoE layers' top-k fails in
    # forward; 6 is DeepSeek-V2's
    default_fix=frozen({"num_experts_per_tok": 6}),
    usual={"deepseek": "deepseek-v2"}, doc="Llama + MLA + MoE with shared experts")
FAMILIES = (DEEPSEEK_V2,)
