"""LFM2-MoE (transformers' `lfm2_moe`, Lfm2MoeForCausalLM) config.json <-> spec, both ways.

LFM2-MoE = LFM2 (families/lfm2.py: short-conv or attention layers, QK-norm, norm_eps,
embedding_norm last) with:
- the first num_dense_layers layers a SwiGLU of intermediate_size as it is (Lfm2MoeMLP reads
  no block_* key), the others a MoE of num_experts experts of moe_intermediate_size (silu, the
  class's own; experts fused as Qwen2-MoE's gate_up_proj / down_proj);
- its router (Lfm2MoeTopKRouter): sigmoid scores; with use_expert_bias the top-k is chosen by
  score + expert_bias (a per-layer buffer) and weighed by the unbiased scores: archscope's
  noaux_tc with one group (n_group 1, topk_group 1: every expert eligible) and the correction
  bias; without it plain top-k of the scores (greedy, sigmoid). norm_topk_prob renormalises,
  routed_scaling_factor scales after. transformers divides by the sum + 1e-6 where archscope's
  noaux_tc adds 1e-20 (greedy: nothing): a relative difference of at most 1e-6 / (the chosen
  scores' sum) in the weights, about 5e-7 for sums near 2, which no test tolerance sees but
  is not bit-exact;
- layer_types required: Lfm2MoeConfig derives none from full_attn_idxs (its decoder layers
  index it and fail on null), so a file without it is refused naming the key.
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import frozen, rules
from archscope.spec.families.lfm2 import (_L, ATTENTION_AND_CONV, DENSE, LFM2, attention, base,
                                          is_lfm2, layer_types, swiglu, with_mixer, write_common)
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _select
from archscope.spec.schema import ModelSpec


def _router(c: Keys) -> dict:
    router = {"scoring": "sigmoid", "normalize": c.flag("norm_topk_prob"),
              "scaling_factor": c.number("routed_scaling_factor")}
    if c.flag("use_expert_bias"):
        router.update(method="noaux_tc", n_group=1, topk_group=1, correction_bias=True)
    return router


def read(c: Keys) -> dict:
    out = base(c)
    n = out["n_layers"]
    if c.get("layer_types", None) is None:
        raise c.error("layer_types", "required: Lfm2MoeConfig derives no layer types (not from "
                                     "full_attn_idxs either) and its decoder layers fail "
                                     "without them")
    types = layer_types(c, n, derived=False)
    dense = min(c.size("num_dense_layers", least=0), n)
    experts = c.size("num_experts")
    k = c.size("num_experts_per_tok")
    if k > experts:
        raise c.error("num_experts_per_tok", f"top-k ({k}) cannot exceed num_experts ({experts})")
    # intermediate_size sizes the dense layers only (none: not read, so no default is noted)
    mlp = swiglu(c.size("intermediate_size")) if dense else None
    moe = {"kind": "moe", "activation": "silu", "n_experts": experts, "top_k": k,
           "d_expert": c.size("moe_intermediate_size"), "router": _router(c)}
    out.update(attention=attention(c, out["d_model"]), ffn=mlp if dense == n else moe)
    if 0 < dense < n:
        out["layers"] = [{"select": _select(list(range(dense))), "ffn": mlp}]
    return with_mixer(c, out, types)


def write(s: ModelSpec) -> dict:
    """Lfm2MoeConfig's keys for `s`: the dense layers must come first (num_dense_layers)."""
    out = write_common(s, "LFM2-MoE")
    dense = [layer.index for layer in s.plan if not layer.is_moe]
    if dense != list(range(len(dense))):
        raise SpecError(f"LFM2-MoE's dense layers are its first num_dense_layers; here "
                        f"{dense}", key="layers")
    out["num_dense_layers"] = len(dense)
    if dense:
        out["intermediate_size"] = s.plan[0].ffn.d_ff
    moe = next((layer.ffn for layer in s.plan if layer.is_moe), None)
    if moe is not None:
        r = moe.routing
        out.update({"num_experts": moe.n_experts, "num_experts_per_tok": moe.top_k,
                    "moe_intermediate_size": moe.d_expert, "norm_topk_prob": r.normalize,
                    "routed_scaling_factor": r.scaling_factor,
                    "use_expert_bias": r.correction_bias})
    return out


GATE_UP = f"{_L}.feed_forward.experts.gate_up_proj"
DOWN = f"{_L}.feed_forward.experts.down_proj"
MOE = rules(
    (f"{_L}.feed_forward.gate.weight", "layers.{i}.mlp.gate.weight"),
    (f"{_L}.feed_forward.expert_bias", "layers.{i}.mlp.gate.e_score_correction_bias"),
    (GATE_UP, "layers.{i}.mlp.experts.gate_up_proj"),
    (DOWN, "layers.{i}.mlp.experts.down_proj"))

LFM2_MOE = LFM2.but(
    "lfm2_moe", "Lfm2MoeForCausalLM", read=read, write=write,
    exports=lambda s: is_lfm2(s) and any(layer.is_moe for layer in s.plan),
    ffns=("moe", "swiglu"), weights=ATTENTION_AND_CONV + DENSE + MOE,
    # the published checkpoints keep one tensor per expert (transformers merges them)
    per_expert=((f"{_L}.feed_forward.experts.{{j}}.w1.weight", GATE_UP, 0, 2),
                (f"{_L}.feed_forward.experts.{{j}}.w3.weight", GATE_UP, 1, 2),
                (f"{_L}.feed_forward.experts.{{j}}.w2.weight", DOWN, 0, 1)),
    spec_keys=LFM2.key_table(**{
        "ffn.d_ff": "intermediate_size", "ffn.n_experts": "num_experts",
        "ffn.top_k": "num_experts_per_tok", "ffn.d_expert": "moe_intermediate_size",
        "ffn.router.normalize": "norm_topk_prob",
        "ffn.router.scaling_factor": "routed_scaling_factor",
        "ffn.router.correction_bias": "use_expert_bias", "layers": "layer_types"}),
    key_fields=LFM2.field_table(num_dense_layers="n_layers"),
    # Lfm2MoeConfig() has layer_types null, with which its own decoder layers fail: the
    # smallest fix is a list; this one puts attention on every fourth layer, as LFM2 spreads it
    default_fix=frozen({"layer_types": ["full_attention" if i % 4 == 3 else "conv"
                                        for i in range(32)]}),
    names=("lfm2",), usual={"lfm2-moe": "lfm2-8b-a1b"},
    doc="LFM2 + dense first layers, then a sigmoid-routed MoE with a selection-only bias")
FAMILIES = (LFM2_MOE,)
