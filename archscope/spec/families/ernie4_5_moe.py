"""ERNIE 4.5 MoE (transformers' `ernie4_5_moe`, Ernie4_5_MoeForCausalLM; modular: Llama's
attention and norms, Mixtral's experts, Qwen3-MoE's decoder layer): Llama's block with use_bias
on q/k/v/o, the dense MLP, the shared experts and the lm_head (never the routed experts), RoPE on
adjacent pairs (repeat_interleave'd frequencies: position.interleaved), embeddings tied by
default.

Layer i is MoE when (i + 1) % moe_layer_interval == 0 and moe_layer_start_index <= i <=
moe_layer_end_index (-1: the last layer), else a dense MLP of intermediate_size. A MoE layer has
moe_num_experts routed experts of moe_intermediate_size, moe_k per token, and
moe_num_shared_experts shared ones (one MLP of moe_num_shared_experts * moe_intermediate_size).
Its router (Ernie4_5_MoeTopKRouter): softmax over the fp32 logits, the top-k chosen by those
scores + moe_statics.e_score_correction_bias, weighed by the unbiased scores divided by their sum
(clamped below at moe_norm_min): noaux_tc with one group and softmax scoring. The bias is a
parameter, [1, moe_num_experts], which transformers counts: router.correction_bias_parameter.
"""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _base, _heads, _select
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

# archscope divides by the sum + 1e-20; transformers by max(sum, moe_norm_min): the same
# number in fp32 while the floor is this small (the default, and what the releases set)
NORM_MIN = 1e-12


def moe_layers(c: Keys, n: int) -> list[int]:
    """Ernie4_5_MoeDecoderLayer's rule (moe_layer_end_index -1: Ernie4_5_MoeConfig's last
    layer)."""
    start, step = c.size("moe_layer_start_index", least=0), c.size("moe_layer_interval")
    end = c.get("moe_layer_end_index")
    end = n - 1 if end == -1 else c.size("moe_layer_end_index", least=0)
    return [i for i in range(n) if (i + 1) % step == 0 and start <= i <= end]


def read(c: Keys) -> dict:
    base = _base(c)
    heads, kv, head_dim = _heads(c, base["d_model"])
    bias = c.flag("use_bias")
    out = {**base, "position": {**base["position"], "interleaved": True},
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": head_dim, "bias": bias},
           "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"),
                   "activation": _act(c), **({"bias": True} if bias else {})},
           **({"head": {"bias": True}} if bias else {})}
    n = out["n_layers"]
    sparse = moe_layers(c, n)
    if not sparse:
        return out
    experts, k = c.size("moe_num_experts"), c.size("moe_k")
    if k > experts:
        raise c.error("moe_k", f"top-k ({k}) cannot exceed moe_num_experts ({experts})")
    shared = c.size("moe_num_shared_experts", least=0)
    if bias and shared:
        raise c.error("use_bias", "gives Ernie 4.5's shared experts a bias and its routed "
                                  "experts none; archscope's MoE has one bias switch for both")
    floor = c.number("moe_norm_min", positive=False)
    if floor > NORM_MIN:
        raise c.error("moe_norm_min", f"{floor} floors the sum the router's weights are divided "
                                      f"by; archscope's router adds 1e-20 instead (the same "
                                      f"up to {NORM_MIN})")
    moe = {"kind": "moe", "activation": _act(c), "n_experts": experts, "top_k": k,
           "d_expert": c.size("moe_intermediate_size"), "n_shared_experts": shared,
           "router": {"method": "noaux_tc", "scoring": "softmax", "correction_bias": True,
                      "correction_bias_parameter": True, "n_group": 1, "topk_group": 1}}
    dense = [i for i in range(n) if i not in sparse]
    mlp, out["ffn"] = out["ffn"], moe
    if dense:
        out["layers"] = [{"select": _select(dense), "ffn": mlp}]
    return out


def _pattern(sparse: list[int], n: int) -> tuple[int, int, int]:
    """(moe_layer_start_index, moe_layer_end_index, moe_layer_interval) that pick `sparse`;
    where none does, the closest (the read-back names the layer that differs)."""
    if not sparse:
        return n, n - 1, 1
    start, end = sparse[0], sparse[-1]
    for step in range(1, n + 1):
        if [i for i in range(n) if (i + 1) % step == 0 and start <= i <= end] == sparse:
            return start, end, step
    return start, end, 1


def write(s: ModelSpec) -> dict:
    a = s.attention
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    dense = next((layer.ffn for layer in s.plan if not layer.is_moe), None)
    start, end, step = _pattern([layer.index for layer in s.plan if layer.is_moe], s.n_layers)
    out = {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "use_bias": a.bias,
           "hidden_act": HF_ACT[(moe or dense).activation],
           "moe_layer_start_index": start, "moe_layer_end_index": end,
           "moe_layer_interval": step, "moe_norm_min": NORM_MIN}
    if dense is not None:
        out["intermediate_size"] = dense.d_ff
    if moe is not None:
        out.update({"moe_num_experts": moe.n_experts, "moe_k": moe.top_k,
                    "moe_intermediate_size": moe.d_expert,
                    "moe_num_shared_experts": moe.shared_experts})
    return out


def _claims(s: ModelSpec) -> bool:
    """A MoE whose router's correction bias is a parameter: only Ernie 4.5's class has one."""
    return any(layer.is_moe and layer.ffn.routing.correction_bias_parameter
               for layer in s.plan)


_MLP = "model.layers.{i}.mlp"
WEIGHTS = (LLAMA.weights + rules(("lm_head.bias", "lm_head.bias")) + MOE_WEIGHTS + rules(
    (f"{_MLP}.gate.moe_statics.e_score_correction_bias",
     "layers.{i}.mlp.gate.e_score_correction_bias", {"layout": "one_row"}),
    *[(f"{_MLP}.shared_experts.{proj}.{{p}}", f"layers.{{i}}.mlp.shared_experts.{proj}.{{p}}")
      for proj in ("gate_proj", "up_proj", "down_proj")]))
ERNIE4_5_MOE = LLAMA.but(
    "ernie4_5_moe", "Ernie4_5_MoeForCausalLM", read=read, write=write, exports=_claims,
    ffns=("moe", "swiglu"), weights=WEIGHTS, per_expert=PER_EXPERT,
    # the name in published and saved files (transformers renames it while loading)
    renamed_tensors=((f"{_MLP}.moe_statics.e_score_correction_bias",
                      f"{_MLP}.gate.moe_statics.e_score_correction_bias"),),
    spec_keys=LLAMA.key_table(**{
        "attention.bias": "use_bias", "ffn.bias": "use_bias", "head.bias": "use_bias",
        "ffn.n_experts": "moe_num_experts", "ffn.top_k": "moe_k",
        "ffn.d_expert": "moe_intermediate_size", "ffn.n_shared_experts": "moe_num_shared_experts",
        "layers": "moe_layer_interval"}),
    names=("ernie",),
    doc="Llama + adjacent-pair RoPE + MoE whose softmax router's correction bias is a parameter")
FAMILIES = (ERNIE4_5_MOE,)
