"""Qwen3-MoE (transformers' `qwen3_moe`): Qwen3 + Mixtral's MoE names on the layers
decoder_sparse_step and mlp_only_layers pick (the others Qwen3's dense MLP); one window for every
layer, if any. Published checkpoints keep one tensor per expert (DeepSeek's spelling)."""

from __future__ import annotations

from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.families.qwen3 import QWEN3, head_norm
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _moe, _patch, _select
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec


def read(c: Keys) -> dict:
    out = _patch(read_llama(c, bias=("attention_bias",)), attention={"qk_norm": "head"})
    window = c.size("sliding_window", null=True)  # checked whether or not it is used
    if c.flag("use_sliding_window") and window is not None:
        out = _patch(out, attention={"window": window})
    n, experts = out["n_layers"], c.alias("num_experts", "num_local_experts")
    n_experts = c.size(experts, least=0)
    step, only = c.size("decoder_sparse_step"), c.indices("mlp_only_layers", n)
    # transformers' rule: MoE when i is not in mlp_only_layers, num_experts > 0 and
    # (i + 1) % decoder_sparse_step == 0
    dense = [i for i in range(n) if i in only or not n_experts or (i + 1) % step]
    if len(dense) == n:
        return out
    mlp = out["ffn"]
    out["ffn"] = {**_moe(c, experts=experts), "d_expert": c.size("moe_intermediate_size"),
                  "router": {"normalize": c.flag("norm_topk_prob")}}
    if dense:
        out["layers"] = [{"select": _select(dense), "ffn": mlp}]
    return out


def write(s: ModelSpec) -> dict:
    """Qwen3's keys + the MoE's; dense layers as mlp_only_layers (decoder_sparse_step 1), and
    one window for every layer (Qwen3Moe has no layer_types)."""
    moe = next(layer.ffn for layer in s.plan if layer.is_moe)
    dense = [layer.index for layer in s.plan if not layer.is_moe]
    window = next((layer.window for layer in s.plan if layer.window), None)
    a = s.attention
    out = {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
           "head_dim": a.head_dim, "attention_bias": a.bias,
           "hidden_act": HF_ACT[moe.activation], "num_experts": moe.n_experts,
           "num_experts_per_tok": moe.top_k, "moe_intermediate_size": moe.d_expert,
           "norm_topk_prob": moe.routing.normalize, "decoder_sparse_step": 1,
           "mlp_only_layers": dense, "use_sliding_window": window is not None,
           "sliding_window": window}
    if dense:  # else Qwen3MoeConfig's default, which no layer uses
        out["intermediate_size"] = s.plan[dense[0]].ffn.d_ff
    return out


QWEN3_MOE = QWEN3.but(
    "qwen3_moe", "Qwen3MoeForCausalLM", read=read, write=write,
    exports=lambda s: head_norm(s) and any(layer.is_moe for layer in s.plan),
    ffns=("moe", "swiglu"),
    weights=QWEN3.weights + MOE_WEIGHTS, per_expert=PER_EXPERT,
    spec_keys=QWEN3.key_table(**{"ffn.n_experts": "num_experts",
                                 "ffn.d_expert": "moe_intermediate_size",
                                 "ffn.router.normalize": "norm_topk_prob",
                                 "layers": "mlp_only_layers"}),
    names=("qwen",), doc="Qwen3 + MoE")
FAMILIES = (QWEN3_MOE,)
