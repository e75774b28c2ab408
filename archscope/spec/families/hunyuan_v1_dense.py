"""Hunyuan dense (transformers' `hunyuan_v1_dense`, HunYuanDenseV1ForCausalLM, Hunyuan-7B):
Llama + a per-head RMSNorm of q and of k with a weight (query_layernorm, key_layernorm, our
q_norm and k_norm) AFTER RoPE (attention.qk_norm head, qk_norm_after_rope), always: the class
reads no switch. attention_bias covers q, k, v and o_proj; the MLP has no bias (mlp_bias
true, which the class ignores, is refused).

The class takes head_dim as it is (its attention and its NTK-alpha RoPE read config.head_dim):
null is refused, unless the file gives attention_head_dim, Tencent's own name for it (their
published configs say attention_head_dim and no head_dim; transformers reads only head_dim, and
cannot build such a file as it is). Its RoPE: a "dynamic" rope_type with an `alpha` is NTK scaling with a fixed
alpha, which only enlarges the base, rope_theta * alpha ** (head_dim / (head_dim - 2)): read as
plain RoPE of that base (the other keys of that section are unused by it); other RoPE types as
Llama's.
"""

from __future__ import annotations

from archscope.spec.families.base import rules
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.llama import read as read_llama
from archscope.spec.families.llama import write as write_llama
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _patch
from archscope.spec.hf_writers_base import without
from archscope.spec.schema import ModelSpec

ATTENTION = {"qk_norm": "head", "qk_norm_after_rope": True}


def _alpha(c: Keys) -> tuple[str, float] | None:
    """(the key, alpha) of an NTK-alpha RoPE section (rope_type dynamic with an alpha)."""
    for section in ("rope_parameters", "rope_scaling"):
        params = c.mapping(section)
        kind = params.get("rope_type", params.get("type"))
        if kind == "dynamic" and params.get("alpha") is not None:
            return f"{section}.alpha", c.number(f"{section}.alpha", value=params["alpha"])
    return None


def _without_rope(c: Keys) -> Keys:
    """`c` with its RoPE sections reduced to their rope_theta (sharing c's notes)."""
    params = {**c.mapping("rope_scaling"), **c.mapping("rope_parameters")}
    plain = {k: v for k, v in c.raw.items() if k not in ("rope_parameters", "rope_scaling")}
    if params.get("rope_theta") is not None:
        plain["rope_theta"] = params["rope_theta"]
    keys = Keys(plain, c.model_type, c.where, c.fields, c.family)
    keys.defaulted = c.defaulted
    return keys


def _head_dim(c: Keys) -> int:
    """head_dim, or Tencent's own name for it, attention_head_dim, where head_dim is absent or
    null (Tencent's published configs; transformers' class cannot run without head_dim)."""
    head_dim = c.size("head_dim", null=True)
    named = c.raw.get("attention_head_dim")
    if named is not None:
        named = c.size("attention_head_dim", value=named)
        if head_dim is not None and head_dim != named:
            raise c.error("attention_head_dim", f"is {named}, but head_dim is {head_dim}: "
                                                "two head sizes")
    if head_dim is None and named is None:
        raise c.error("head_dim", "is null: transformers' Hunyuan classes take head_dim as it "
                                  "is (their attention and RoPE read config.head_dim) and "
                                  "cannot be built without it")
    return head_dim or named


def read(c: Keys) -> dict:
    """Llama's keys (attention_bias on q, k, v and o), head_dim required, the NTK-alpha RoPE,
    the QK-norm after RoPE (see the module doc); Hunyuan's MoE starts from it."""
    head_dim = _head_dim(c)
    if c.raw.get("mlp_bias") is not None and c.flag("mlp_bias"):  # the class reads no switch
        raise c.error("mlp_bias", "true describes MLP biases; transformers' Hunyuan MLPs have "
                                  "none")
    alpha, attention = _alpha(c), {**ATTENTION, "head_dim": head_dim}
    if alpha is None:
        return _patch(read_llama(c, bias=("attention_bias",)), attention=attention)
    key, value = alpha
    if head_dim < 3:
        raise c.error(key, f"NTK-alpha RoPE divides by head_dim - 2; head_dim is {head_dim}")
    out = _patch(read_llama(_without_rope(c), bias=("attention_bias",)), attention=attention)
    theta = out["position"]["theta"] * value ** (head_dim / (head_dim - 2))
    return {**out, "position": {"kind": "rope", "theta": theta}}


def write(s: ModelSpec) -> dict:  # Llama's keys less mlp_bias (RoPE as plain: alpha folded in)
    return without(write_llama(s), "mlp_bias")


def after_rope(s: ModelSpec) -> bool:
    return all(layer.attention is None or layer.attention.qk_norm_after_rope
               for layer in s.plan) and bool(s.attention.qk_norm_after_rope)


# Llama's names + query_layernorm and key_layernorm as our q_norm and k_norm
QK_NORM_AFTER_ROPE_WEIGHTS = rules(
    ("model.layers.{i}.self_attn.query_layernorm.weight", "layers.{i}.self_attn.q_norm.weight"),
    ("model.layers.{i}.self_attn.key_layernorm.weight", "layers.{i}.self_attn.k_norm.weight"),
)
HUNYUAN_V1_DENSE = LLAMA.but(
    "hunyuan_v1_dense", "HunYuanDenseV1ForCausalLM", read=read, write=write,
    exports=lambda s: after_rope(s) and not any(layer.is_moe for layer in s.plan),
    weights=LLAMA.weights + QK_NORM_AFTER_ROPE_WEIGHTS,
    spec_keys=LLAMA.key_table(**{"position.theta": "rope_theta"}),
    # HunYuanDenseV1Config leaves head_dim null, which its own class cannot build (it reads
    # config.head_dim as it is): hidden_size / num_attention_heads, what Llama derives
    default_fix={"head_dim": 128}, names=("hunyuan",),
    doc="Llama + per-head QK-norm after RoPE")
FAMILIES = (HUNYUAN_V1_DENSE,)
