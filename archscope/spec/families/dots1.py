"""dots.llm1 (transformers' `dots1`, Dots1ForCausalLM): Qwen3's attention (per-head QK-norm;
attention_bias on q, k, v and o) and windows on the layers layer_types marks + DeepSeek-V3's MoE
(sigmoid scores, a selection-only correction bias, group-limited top-k over n_group groups,
routed_scaling_factor, n_shared_experts always-on experts) on every layer from
first_k_dense_replace on, the first ones a dense MLP of intermediate_size.

Dots1Config's window rule: with layer_types absent, layer i slides when sliding_window is set and
i >= max_window_layers (there is no use_sliding_window switch).
"""

from __future__ import annotations

from archscope.spec.families.base import frozen
from archscope.spec.families.deepseek_v2 import PER_EXPERT, routed_keys
from archscope.spec.families.deepseek_v3 import DEEPSEEK_V3, sigmoid_routed
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.qwen3 import QWEN3, head_norm
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _check_types, _patch, _select
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec


def sigmoid_moe(c: Keys, experts: str = "n_routed_experts",
                shared: str = "n_shared_experts") -> dict:
    """DeepseekV3TopkRouter's routed experts and DeepseekV3MoE's shared ones (the classes
    derived from them name the counts `experts` and `shared`): sigmoid scores, chosen with the
    correction bias over the best topk_group of n_group groups, norm_topk_prob, scaled."""
    c.text("topk_method", ("noaux_tc",), null=True, fallback=None, noun="routing method")
    c.text("scoring_func", ("sigmoid",), null=True, fallback=None, noun="scoring function")
    n, k = c.size(experts), c.size("num_experts_per_tok")
    if k > n:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed {experts} ({n})")
    router = {"method": "noaux_tc", "scoring": "sigmoid", "correction_bias": True,
              "normalize": bool(c.flag("norm_topk_prob", null=True)),
              "scaling_factor": c.number("routed_scaling_factor"),
              "n_group": c.size("n_group"), "topk_group": c.size("topk_group")}
    return {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
            "d_expert": c.size("moe_intermediate_size"),
            "n_shared_experts": c.size(shared, least=0), "router": router}


def with_dense(out: dict, moe: dict, dense: list[int]) -> dict:
    """`out` (its ffn the dense MLP) with `moe` on every layer but `dense`."""
    n = out["n_layers"]
    if len(dense) == n:
        return out
    mlp, out = out["ffn"], {**out, "ffn": moe}
    if dense:
        out.setdefault("layers", []).append({"select": _select(dense), "ffn": mlp})
    return out


def read(c: Keys) -> dict:
    out = _patch(read_llama(c, bias=("attention_bias",)), attention={"qk_norm": "head"})
    n = out["n_layers"]
    window, first = c.size("sliding_window", null=True), c.size("max_window_layers", least=0)
    types = c.get("layer_types", None)
    if types is None:  # Dots1Config's rule
        types = ["sliding_attention" if window is not None and i >= first else "full_attention"
                 for i in range(n)]
    _check_types(c, types, n)
    sliding = [i for i, t in enumerate(types) if t == "sliding_attention"]
    if sliding and window is None:
        raise c.error("sliding_window", f"is null, but layer_types marks layer {sliding[0]} "
                                        "sliding_attention")
    if sliding and len(sliding) == n:
        out = _patch(out, attention={"window": window})
    elif sliding:
        out["layers"] = [{"select": _select(sliding), "attention": {"window": window}}]
    k = c.size("first_k_dense_replace", least=0)
    return with_dense(out, sigmoid_moe(c) if k < n else {}, list(range(min(k, n))))


def moe_keys(s: ModelSpec) -> dict:
    """DeepSeek-V3's MoE keys for `s`'s first MoE layer, first_k_dense_replace (the layers
    before it; the read-back names a dense layer after it) and the dense MLP's width."""
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    k = next((layer.index for layer in s.plan if layer.is_moe), s.n_layers)
    dense = next((layer.ffn for layer in s.plan if not layer.is_moe), None)
    out = {"first_k_dense_replace": k, "hidden_act": HF_ACT[(moe or dense).activation]}
    if dense is not None:
        out["intermediate_size"] = dense.d_ff
    if moe is not None:
        out.update(routed_keys(moe))
    return out


def write(s: ModelSpec) -> dict:
    a = s.attention
    window = next((layer.window for layer in s.plan if layer.window), None)
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "sliding_window": window,
            "max_window_layers": s.n_layers,
            "layer_types": [layer.layer_type for layer in s.plan], **moe_keys(s)}


# Qwen3's names (q_norm, k_norm) + DeepSeek-V3's MoE names (the router's correction bias, the
# shared experts); dense layers use Llama's mlp names
V3_MOE_WEIGHTS = tuple(r for r in DEEPSEEK_V3.weights
                       if ".mlp.shared_experts." in r.hf or ".mlp.gate." in r.hf)
# the MoE's spec keys -> DeepSeek-V3's config keys
MOE_KEYS = {k: v for k, v in DEEPSEEK_V3.spec_keys.items() if k.startswith("ffn.")}
MOE_NAMES = MOE_WEIGHTS + tuple(r for r in V3_MOE_WEIGHTS if r not in MOE_WEIGHTS)
DOTS1 = QWEN3.but(
    "dots1", "Dots1ForCausalLM", read=read, write=write,
    exports=lambda s: head_norm(s) and sigmoid_routed(s), ffns=("moe", "swiglu"),
    weights=QWEN3.weights + MOE_NAMES, per_expert=PER_EXPERT,
    spec_keys=QWEN3.key_table(**MOE_KEYS, layers="layer_types"),
    # Dots1Config's defaults leave the experts unset (None), and its class cannot be built
    # from them: the published dots.llm1's three values (rednote-hilab/dots.llm1.base)
    default_fix=frozen({"n_routed_experts": 128, "num_experts_per_tok": 6, "n_shared_experts": 2}),
    doc="Qwen3 + DeepSeek-V3's MoE")
FAMILIES = (DOTS1,)
