"""OLMo (transformers' `olmo`, OlmoForCausalLM): Llama with LayerNorms that have no weight and
no bias (OlmoLayerNorm: F.layer_norm in fp32, eps fixed at 1e-5, no config key), q, k and v
optionally clamped (clip_qkv), attention_bias on q/k/v/o, no MLP bias, head_dim hidden_size /
num_attention_heads (the class reads no head_dim)."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.llama import LLAMA
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _act, _heads, _rope
from archscope.spec.hf_writers_base import HF_ACT, rope_parameters
from archscope.spec.schema import ModelSpec

EPS = 1e-5  # OlmoLayerNorm's, hard-coded


def read(c: Keys) -> dict:
    width = c.size("hidden_size")
    heads, kv, _ = _heads(c, width)
    return {"vocab_size": c.size("vocab_size"), "d_model": width,
            "n_layers": c.size("num_hidden_layers"),
            "max_seq_len": c.size("max_position_embeddings"),
            "tie_embeddings": c.flag("tie_word_embeddings"),
            "norm": {"kind": "layernorm", "eps": EPS, "weight": False, "position": "pre"},
            "position": _rope(c),
            "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                          "head_dim": width // heads, "bias": c.flag("attention_bias"),
                          "clip_qkv": c.number("clip_qkv", null=True)},
            "ffn": {"kind": "swiglu", "d_ff": c.size("intermediate_size"),
                    "activation": _act(c)}}


def write(s: ModelSpec) -> dict:
    a, f = s.attention, s.ffn
    if a.head_dim * a.n_heads != s.d_model:
        raise SpecError(f"transformers' Olmo sizes heads as hidden_size / num_attention_heads "
                        f"({s.d_model} / {a.n_heads}); head_dim is {a.head_dim}",
                        key="attention.head_dim")
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "rope_parameters": rope_parameters(s.position),
            "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "attention_bias": a.bias, "clip_qkv": a.clip_qkv, "intermediate_size": f.d_ff,
            "hidden_act": HF_ACT[f.activation], "pad_token_id": None, "eos_token_id": None}


OLMO = LLAMA.but(
    "olmo", "OlmoForCausalLM", read=read, write=write,
    # the one class whose LayerNorms have no weight
    exports=lambda s: s.norm.kind == "layernorm" and not s.norm.has_weight,
    weights=tuple(r for r in LLAMA.weights if "layernorm" not in r.hf and "model.norm" not in r.hf),
    spec_keys=LLAMA.key_table(**{"attention.clip_qkv": "clip_qkv"}), names=("olmo",),
    doc="Llama with weightless LayerNorms and clipped q/k/v")
FAMILIES = (OLMO,)
