"""Hunyuan MoE (transformers' `hunyuan_v1_moe`, HunYuanMoEV1ForCausalLM, Hunyuan-A13B):
Hunyuan dense's attention (q_norm and k_norm, per head with a weight, AFTER RoPE; the NTK-alpha
RoPE; head_dim required) + a MoE on every layer: num_experts experts of intermediate_size, a
softmax router (`gate.wg`, fp32) whose top-k (moe_topk: one number, or one per layer) is always
renormalised, and one always-on shared MLP (`shared_mlp`) of intermediate_size added to them.

Keys of the published configs that transformers' class does not read are read here to check
that the class builds what they describe, and refused where it would not (naming the key):
moe_intermediate_size and num_shared_expert (one number or one per layer) must be
intermediate_size and 1; use_mixed_mlp_moe, use_qk_norm, norm_topk_prob and use_rotary_pos_emb
not false; use_cla (cross-layer KV sharing) and use_mla not true; moe_layer_num_skipped 0,
routed_scaling_factor 1 (and, as Hunyuan dense's, mlp_bias not true).
"""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.base import rules
from archscope.spec.families.deepseek_v2 import PER_EXPERT
from archscope.spec.families.hunyuan_v1_dense import HUNYUAN_V1_DENSE, after_rope
from archscope.spec.families.hunyuan_v1_dense import read as read_dense
from archscope.spec.families.hunyuan_v1_dense import write as write_dense
from archscope.spec.families.mixtral import MOE_WEIGHTS
from archscope.spec.hf_keys import Keys, what
from archscope.spec.hf_readers_base import _act, _select
from archscope.spec.schema import ModelSpec

# key -> (the value transformers' class builds as, why another is refused); None: the class's
_UNREAD = {"use_mixed_mlp_moe": (True, "without the shared MLP (use_mixed_mlp_moe false); "
                                       "transformers' class always adds it"),
           "use_qk_norm": (True, "without the QK-norm (use_qk_norm false); transformers' class "
                                 "always norms q and k after RoPE"),
           "use_cla": (False, "with cross-layer attention (K/V shared across layers); "
                              "transformers' class builds K/V on every layer"),
           "moe_layer_num_skipped": (0, "with dense layers first; transformers' class makes "
                                        "every layer MoE"),
           "routed_scaling_factor": (1.0, "with the routed experts scaled; transformers' router "
                                          "does not scale them"),
           "norm_topk_prob": (True, "with the top-k weights left unnormalised; transformers' "
                                    "router always renormalises them"),
           "use_mla": (False, "with latent attention (MLA); transformers' class builds GQA"),
           "use_rotary_pos_emb": (True, "without RoPE; transformers' class always rotates q "
                                        "and k")}


def per_layer(c: Keys, key: str, n: int, value) -> list[int] | None:
    """`key`'s `value` for each of n layers: one integer, or a list indexed by layer
    (transformers reads entry i for layer i); None: None."""
    if value is None:
        return None
    if isinstance(value, list):
        if len(value) < n:
            raise c.error(key, f"has {len(value)} entries, but num_hidden_layers is {n}")
        return [c.size(f"{key}[{i}]", value=v) for i, v in enumerate(value[:n])]
    return [c.size(key, value=value)] * n


def _check_unread(c: Keys, n: int, d: int) -> None:
    """The published keys transformers' class does not read, checked against what it builds."""
    for key, want in (("moe_intermediate_size", d), ("num_shared_expert", 1)):
        for i, v in enumerate(per_layer(c, key, n, c.raw.get(key)) or []):
            if v != want:
                where = f"{key}[{i}]" if isinstance(c.raw[key], list) else key
                raise c.error(where, f"is {v}, but transformers' HunYuanMoEV1Moe builds "
                                     + ("experts of intermediate_size" if want == d else
                                        "exactly one shared MLP") + f" ({want}) on every layer")
    for key, (want, why) in _UNREAD.items():
        value = c.raw.get(key)
        if value is not None and value != want:
            raise c.error(key, f"{what(value)} describes a model {why}")


def read(c: Keys) -> dict:
    out = read_dense(c)
    n, d = out["n_layers"], c.size("intermediate_size")
    experts = c.size("num_experts")  # HunYuanMoEV1Config types it one integer
    top_k = per_layer(c, "moe_topk", n, c.get("moe_topk"))
    for i, k in enumerate(top_k):
        if k > experts:
            raise c.error("moe_topk", f"top-k ({k}, layer {i}) cannot exceed num_experts "
                                      f"({experts})")
    _check_unread(c, n, d)
    out["ffn"] = {"kind": "moe", "activation": _act(c), "n_experts": experts,
                  "top_k": top_k[0], "d_expert": d, "n_shared_experts": 1,
                  "router": {"normalize": True}}
    for k in dict.fromkeys(top_k[1:]):
        if k != top_k[0]:
            chosen = [i for i, v in enumerate(top_k) if v == k]
            out.setdefault("layers", []).append({"select": _select(chosen), "ffn": {"top_k": k}})
    return out


def write(s: ModelSpec) -> dict:
    """HunYuanMoEV1Config's keys: Hunyuan dense's, the experts' width as intermediate_size,
    moe_topk one number or one per layer. What the class cannot build (a dense layer, other
    shared experts, another router) comes back different from the read-back."""
    moe = [layer.ffn for layer in s.plan if layer.is_moe]
    if not moe:
        raise SpecError("transformers' HunYuanMoEV1 makes every layer MoE", key="ffn.kind")
    top_k = [layer.ffn.top_k if layer.is_moe else moe[0].top_k for layer in s.plan]
    return {**write_dense(s), "num_experts": moe[0].n_experts,
            "intermediate_size": moe[0].d_expert,
            "moe_topk": top_k[0] if len(set(top_k)) == 1 else top_k}


# Hunyuan dense's names + the experts (Mixtral's fused tensors, published per expert), the
# router `gate.wg` (our gate) and the shared MLP `shared_mlp` (our shared_experts)
MOE_NAMES = rules(
    ("model.layers.{i}.mlp.gate.wg.weight", "layers.{i}.mlp.gate.weight"),
    *[(f"model.layers.{{i}}.mlp.shared_mlp.{proj}.weight",
       f"layers.{{i}}.mlp.shared_experts.{proj}.weight")
      for proj in ("gate_proj", "up_proj", "down_proj")],
) + tuple(r for r in MOE_WEIGHTS if ".mlp.gate." not in r.hf)
HUNYUAN_V1_MOE = HUNYUAN_V1_DENSE.but(
    "hunyuan_v1_moe", "HunYuanMoEV1ForCausalLM", read=read, write=write,
    exports=lambda s: after_rope(s) and all(layer.is_moe for layer in s.plan),
    ffns=("moe",), weights=HUNYUAN_V1_DENSE.weights + MOE_NAMES, per_expert=PER_EXPERT,
    spec_keys=HUNYUAN_V1_DENSE.key_table(**{
        "ffn.n_experts": "num_experts", "ffn.top_k": "moe_topk",
        "ffn.d_expert": "intermediate_size", "layers": "moe_topk"}),
    # as Hunyuan dense's: HunYuanMoEV1Config leaves head_dim null, which its class cannot build
    default_fix={"head_dim": 128}, names=("hunyuan",),
    doc="Hunyuan dense + MoE (softmax top-k renormalised) with one shared MLP")
FAMILIES = (HUNYUAN_V1_MOE,)
