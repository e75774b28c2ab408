"""GLM-4.5 (transformers' glm4_moe, Glm4MoeForCausalLM): its config.json reader and writer.

GLM-4.5 = Llama's skeleton + q/k/v bias with no o_proj bias + per-head QK-norm when
`use_qk_norm` + RoPE on the first int(head_dim * partial_rotary_factor) dims of each head +
DeepSeek-V3's MoE (sigmoid scores, a selection-only correction bias, group-limited top-k,
routed_scaling_factor, shared experts) on every layer from `first_k_dense_replace` on.
transformers' Glm4MoeTopkRouter and Glm4MoeMoE are DeepseekV3TopkRouter and DeepseekV3MoE
line for line (5.23.0), so the spec's noaux_tc router is theirs.

"""

from __future__ import annotations

from archscope.spec.families.base import frozen
from archscope.spec.families.deepseek_v2 import PER_EXPERT, routed_keys
from archscope.spec.families.deepseek_v3 import DEEPSEEK_V3, sigmoid_routed
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.qwen3 import QWEN3
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _base, _heads, _select, mtp_layers, rotary_fraction
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

_PARTIAL = "partial_rotary_factor"
_GLM_PARTIAL_DEFAULT = 0.5  # Glm4MoeConfig.__post_init__ sets it when the file has none


def _moe(c: Keys) -> dict:
    """The routed and shared experts with Glm4MoeTopkRouter: always sigmoid noaux_tc (the
    topk_method / scoring_func some GLM files carry, e.g. GLM-4.7-FP8's, may only agree)."""
    c.text("topk_method", ("noaux_tc",), null=True, fallback=None, noun="routing method")
    c.text("scoring_func", ("sigmoid",), null=True, fallback=None, noun="scoring function")
    n, k = c.size("n_routed_experts"), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed n_routed_experts ({n})")
    router = {"method": "noaux_tc", "scoring": "sigmoid", "correction_bias": True,
              "normalize": c.flag("norm_topk_prob"),
              "scaling_factor": c.number("routed_scaling_factor"),
              "n_group": c.size("n_group"), "topk_group": c.size("topk_group")}
    return {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
            "d_expert": c.size("moe_intermediate_size"),
            "n_shared_experts": c.size("n_shared_experts", least=0), "router": router}


def read(c: Keys) -> dict:
    base = _base(c, read_elsewhere=(_PARTIAL,))
    heads, kv, head_dim = _heads(c, base["d_model"])
    attention = {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv, "head_dim": head_dim,
                 # attention_bias: q/k/v only; Glm4MoeAttention's o_proj never has one
                 **({"bias": True, "out_bias": False} if c.flag("attention_bias") else {}),
                 **({"qk_norm": "head"} if c.flag("use_qk_norm") else {}),
                 "rotary_fraction": rotary_fraction(c, _GLM_PARTIAL_DEFAULT)}
    out = {**base, "attention": attention, "mtp_layers": mtp_layers(c)}
    n = base["n_layers"]
    # Glm4MoeDecoderLayer: MoE when layer_idx >= first_k_dense_replace (no other rule)
    dense = list(range(min(c.size("first_k_dense_replace", least=0), n)))
    mlp = {"kind": "swiglu", "d_ff": c.size("intermediate_size"), "activation": _act(c)}
    if len(dense) == n:
        return {**out, "ffn": mlp}
    out["ffn"] = _moe(c)
    if dense:
        out["layers"] = [{"select": _select(dense), "ffn": mlp}]
    return out


def write(s: ModelSpec) -> dict:
    """The keys Glm4MoeConfig reads; what it cannot hold (o_proj bias, full-width QK-norm, a
    softmax router) comes back different, and the exporter's read-back names the key."""
    a = s.attention
    base = to_base(s)
    base["rope_parameters"][_PARTIAL] = a.rotary_fraction or 1.0
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    k = next((layer.index for layer in s.plan if layer.is_moe), s.n_layers)
    out = {**base,
           "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "attention_bias": a.bias, "use_qk_norm": bool(a.qk_norm),
           "hidden_act": HF_ACT[(moe or s.plan[0].ffn).activation],
           "first_k_dense_replace": k, "num_nextn_predict_layers": s.mtp_layers}
    if k:
        out["intermediate_size"] = s.plan[0].ffn.d_ff
    if moe is not None:
        out.update(routed_keys(moe))
    return out


def _claims(s: ModelSpec) -> bool:
    """DeepSeek-V3's router over GQA, or part of each head rotated (GLM's one partial RoPE
    among the classes written here that build no state mixer)."""
    return sigmoid_routed(s) or any(layer.attention and layer.attention.rotary_fraction
                                    for layer in s.plan)


# Qwen3's attention names (q_norm, k_norm) + DeepSeek-V3's MoE names (router with its correction
# bias, fused experts, shared_experts); dense first layers: Llama's mlp
_SHARED = tuple(r for r in DEEPSEEK_V3.weights if ".mlp.shared_experts." in r.hf
                or ".mlp.gate." in r.hf)
# transformers' modular file: Glm4Moe = DeepseekV3's decoder with Cohere's attention (GQA)
GLM4_MOE = DEEPSEEK_V3.but(
    "glm4_moe", "Glm4MoeForCausalLM", read=read, write=write, exports=_claims,
    attentions=("gqa",), ffns=("moe", "swiglu"),
    weights=QWEN3.weights + MOE_WEIGHTS + tuple(r for r in _SHARED if r not in MOE_WEIGHTS),
    per_expert=PER_EXPERT,
    spec_keys=DEEPSEEK_V3.key_table(**{
        "ffn.d_ff": "intermediate_size", "attention.qk_norm": "use_qk_norm",
        "attention.bias": "attention_bias", "attention.out_bias": "attention_bias",
        "attention.rotary_fraction": "partial_rotary_factor"}),
    names=("glm",), doc="Llama + partial RoPE + q/k/v bias + DeepSeek-V3's MoE",
    # 4096 / 96 heads gives head_dim 42, whose partial rotary half (21) is odd: its RoPE
    # tables come out 22 wide and the forward fails; GLM-4.5 sets head_dim 128
    default_fix=frozen({"head_dim": 128}))
FAMILIES = (GLM4_MOE,)
