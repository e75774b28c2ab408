"""Cohere (transformers' `cohere`, CohereForCausalLM: Command R): Llama's projections in a
parallel block (one LayerNorm feeds attention and the MLP side by side, x + attn(n(x)) +
mlp(n(x)): norm.position parallel), LayerNorms without bias (CohereLayerNorm, eps
layer_norm_eps, the final one too), RoPE on adjacent pairs (repeat_interleave'd frequencies:
position.interleaved), logits multiplied by logit_scale (the spec's logits divisor is its
reciprocal), embeddings tied by default, and with use_qk_norm a LayerNorm of q and of k over
each head with a weight row per head (CohereLayerNorm of shape (heads, head_dim):
attention.qk_norm per_head, qk_norm_kind layernorm), before RoPE."""

from __future__ import annotations

import math

from archscope.errors import SpecError
from archscope.spec.families.llama import LLAMA
from archscope.spec.families.qwen3 import QK_NORM_WEIGHTS
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _heads, _rope
from archscope.spec.hf_writers_base import HF_ACT, rope_parameters
from archscope.spec.schema import ModelSpec


def logit_scale(c: Keys) -> dict:
    """multipliers.logits, the divisor, from logit_scale, the factor (null is refused: the
    class multiplies by it)."""
    scale = c.get("logit_scale")
    if scale is None:
        raise c.error("logit_scale", "null: transformers' Cohere multiplies the logits by it "
                                     "(a number is needed; 1.0 for none)")
    return {"logits": 1 / c.number("logit_scale")}


def reciprocal(value: float, key: str) -> float:
    """A float y with 1 / y == value exactly (the factor a config writes for a divisor, which
    reads back as the same divisor), or SpecError naming `key`."""
    y = 1 / value
    for candidate in (y, math.nextafter(y, math.inf), math.nextafter(y, -math.inf)):
        if 1 / candidate == value:
            return candidate
    raise SpecError(f"no float factor reads back as the divisor {value!r} (its reciprocal "
                    "rounds away from it)", key=key)


def read_base(c: Keys, head_dim: int | None = None) -> dict:
    """What Cohere and Cohere 2 share; `head_dim`: the class's own (Cohere 2 derives it)."""
    width = c.size("hidden_size")
    heads, kv, found = _heads(c, width)
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": c.number("layer_norm_eps"), "bias": False,
                     "position": "parallel"},
            "position": {**_rope(c), "interleaved": True},
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": head_dim or found, "bias": c.flag("attention_bias")},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"),
                    "activation": _act(c)},
            "multipliers": logit_scale(c)}


def read(c: Keys) -> dict:
    out = read_base(c)
    if c.flag("use_qk_norm", null=True):
        out["attention"].update(qk_norm="per_head", qk_norm_kind="layernorm")
    return out


def write_base(s: ModelSpec) -> dict:
    a, f = s.attention, s.ffn
    if s.position.kind != "rope":
        raise SpecError(f"Cohere uses RoPE, not {s.position.kind!r}", key="position.kind")
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "layer_norm_eps": s.norm.eps,
            "rope_parameters": rope_parameters(s.position),
            "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "attention_bias": a.bias, "intermediate_size": f.d_ff,
            "hidden_act": HF_ACT[f.activation],
            "logit_scale": reciprocal(s.mults.logits, "multipliers.logits")}


def write(s: ModelSpec) -> dict:
    return {**write_base(s), "head_dim": s.attention.head_dim,
            "use_qk_norm": s.attention.qk_norm == "per_head"}


def parallel_unbiased(s: ModelSpec) -> bool:
    """Cohere's structure: a parallel block of LayerNorms without bias."""
    return (s.norm.position == "parallel" and s.norm.kind == "layernorm"
            and not s.norm.has_bias)


WEIGHTS = tuple(r for r in LLAMA.weights if "post_attention_layernorm" not in r.hf)
COHERE = LLAMA.but(
    "cohere", "CohereForCausalLM", read=read, write=write, exports=parallel_unbiased,
    weights=WEIGHTS + QK_NORM_WEIGHTS,
    spec_keys=LLAMA.key_table(**{"norm.eps": "layer_norm_eps", "multipliers.logits":
                                 "logit_scale", "attention.qk_norm": "use_qk_norm"}),
    doc="Llama in a parallel block, LayerNorms without bias, adjacent-pair RoPE, logit_scale")
FAMILIES = (COHERE,)
