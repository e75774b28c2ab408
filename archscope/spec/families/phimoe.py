"""Phi-3.5-MoE (transformers' `phimoe`, PhimoeForCausalLM): Mixtral with LayerNorms that have a
bias (nn.LayerNorm, eps rms_norm_eps), q/k/v/o biases (attention_bias), an optional lm_head bias
(lm_head_bias) and SparseMixer routing: PhimoeTopKRouter, a bias-free Linear whose logits
transformers' `sparsemixer` turns, in eval mode, into two experts picked one round at a time,
each weighed by its softmax over the logits within a relative gap of 2 * router_jitter_noise of
it, not renormalised (archscope's router method sparsemixer). It always picks two, whatever
num_experts_per_tok says, so another value is refused. input_jitter_noise and the Gumbel
sampling of sparsemixer act in training only.

RoPE: PhimoeRotaryEmbedding scales cos and sin by short_mscale or long_mscale, switching at
original_max_position_embeddings, for every rope_type but `default` (Phi-3.5-MoE's own file
says longrope): archscope implements neither, so only unscaled RoPE is read (PhimoeConfig's
default). Published checkpoints keep Mixtral's per-expert tensors and `block_sparse_moe.gate`
(transformers 5 renames them to mlp.experts.* and mlp.router).
"""

from __future__ import annotations

from archscope.errors import SpecError, quote
from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.mixtral import MIXTRAL
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _base, _heads
from archscope.spec.hf_writers_base import HF_ACT, to_base
from archscope.spec.schema import ModelSpec

TOP_K = 2  # sparsemixer's rounds: two, however many num_experts_per_tok says


def _unscaled_rope(c: Keys) -> None:
    for section in ("rope_scaling", "rope_parameters"):
        params = c.mapping(section)
        key = "rope_type" if "rope_type" in params else "type"
        kind = params.get(key, "default")
        if kind != "default":
            raise c.error(f"{section}.{key}", f"PhimoeRotaryEmbedding reads RoPE type "
                          f"{quote(kind)} with short_mscale/long_mscale switched at "
                          "original_max_position_embeddings (Phi-3.5-MoE's longrope): archscope "
                          "implements neither; it reads unscaled RoPE only")


def read(c: Keys) -> dict:
    _unscaled_rope(c)
    base = _base(c)
    heads, kv, head_dim = _heads(c, base["d_model"])
    n, k = c.size("num_local_experts"), c.size("num_experts_per_tok")
    if k != TOP_K:
        raise c.error("num_experts_per_tok", f"transformers' Phimoe routes with sparsemixer, "
                                             f"which picks {TOP_K} experts whatever this says "
                                             f"({k}); archscope refuses the ambiguity")
    if k > n:
        raise c.error("num_local_experts", f"sparsemixer picks {TOP_K} experts; there are {n}")
    c.number("input_jitter_noise", positive=False)  # training only: checked, not used
    out = {**base, "norm": {**base["norm"], "kind": "layernorm", "bias": True},
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": head_dim, "bias": c.flag("attention_bias"),
                         "window": c.size("sliding_window", null=True)},
           "ffn": {"kind": "moe", "activation": _act(c), "n_experts": n, "top_k": k,
                   "d_expert": c.size("intermediate_size"),
                   "router": {"method": "sparsemixer", "normalize": False,
                              "jitter_eps": c.number("router_jitter_noise", positive=False)}}}
    if c.flag("lm_head_bias"):
        out["head"] = {"bias": True}
    return out


def write(s: ModelSpec) -> dict:
    """PhimoeConfig's keys for `s`; what its class cannot build (a dense layer, another number
    of experts per token, another router, different windows) is named here, anything else by
    the exporter's read-back."""
    for layer in s.plan:
        f = layer.ffn
        key = "ffn" if f is s.ffn else "layers"
        if not layer.is_moe or f.routing.method != "sparsemixer":
            raise SpecError(f"transformers' Phimoe routes every layer with sparsemixer; layer "
                            f"{layer.index} does not", key=f"{key}.router.method"
                            if key == "ffn" else key)
        if f.top_k != TOP_K:
            raise SpecError(f"transformers' sparsemixer picks {TOP_K} experts, not {f.top_k}",
                            key="ffn.top_k" if key == "ffn" else key)
    windows = {layer.window for layer in s.plan}
    if len(windows) > 1:
        raise SpecError(f"transformers' Phimoe has one sliding_window; the layers use "
                        f"{sorted(windows, key=str)}", key="layers")
    a, f = s.attention, s.ffn
    return {**to_base(s), "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "sliding_window": a.window,
            "intermediate_size": f.d_expert, "hidden_act": HF_ACT[f.activation],
            "num_local_experts": f.n_experts, "num_experts_per_tok": f.top_k,
            "router_jitter_noise": f.routing.jitter_eps, "lm_head_bias": s.lm_head.bias,
            "bos_token_id": None, "eos_token_id": None, "pad_token_id": None}


_MLP = "model.layers.{i}.mlp"
# Llama's attention and norms (weight and bias), Phimoe's router and fused experts, the head
WEIGHTS = tuple(r for r in LLAMA.weights if ".mlp." not in r.hf and "lm_head" not in r.hf) + rules(
    (f"{_MLP}.router.weight", "layers.{i}.mlp.gate.weight"),
    (f"{_MLP}.experts.gate_up_proj", "layers.{i}.mlp.experts.gate_up_proj"),
    (f"{_MLP}.experts.down_proj", "layers.{i}.mlp.experts.down_proj"),
    ("lm_head.{p}", "lm_head.{p}"))


def _sparsemixer(s: ModelSpec) -> bool:
    return any(layer.is_moe and layer.ffn.routing.method == "sparsemixer" for layer in s.plan)


# transformers' modular file builds Phimoe from Mixtral's classes
PHIMOE = MIXTRAL.but(
    "phimoe", "PhimoeForCausalLM", read=read, write=write, exports=_sparsemixer, ffns=("moe",),
    weights=WEIGHTS, per_expert=MIXTRAL.per_expert,
    renamed_tensors=(("model.layers.{i}.block_sparse_moe.gate.weight", f"{_MLP}.router.weight"),),
    spec_keys=MIXTRAL.key_table(**{"ffn.router.jitter_eps": "router_jitter_noise",
                                   "head.bias": "lm_head_bias", "attention.bias": "attention_bias",
                                   "attention.out_bias": "attention_bias"}),
    doc="Mixtral + LayerNorm with bias + q/k/v/o and head biases + SparseMixer")
FAMILIES = (PHIMOE,)
