"""Gemma 2 (transformers' `gemma2`, Gemma2ForCausalLM): Gemma 3 without QK-norm and with one
RoPE for every layer, and with soft caps: four RMSNorms per block scaling by (1 + weight)
(norm.position sandwich, unit_offset), a GeGLU MLP (hidden_activation gelu_pytorch_tanh),
embeddings times sqrt(hidden_size), a softmax scale of query_pre_attn_scalar**-0.5, the
attention logits capped at attn_logit_softcapping (attention.softcap) and the final logits at
final_logit_softcapping (head.softcap), and sliding layers (window `sliding_window`)
alternating with global ones (layer_types, else every second layer is global)."""

from __future__ import annotations

from archscope.errors import SpecError
from archscope.spec.families.gemma3 import (GEMMA3_TEXT, _HF_ACT, _attention_scalar, gemma_shape,
                                           sliding_layers)
from archscope.spec.hf_keys import Keys
from archscope.spec.hf_readers_base import _check_types, _rope, _select
from archscope.spec.hf_writers_base import rope_parameters
from archscope.spec.schema import ModelSpec


def read(c: Keys, position: str = "sandwich") -> dict:
    """The spec mapping of a Gemma 2 config.json; `position`: where its norms sit (VaultGemma
    has no post-sublayer norms: pre)."""
    width, n, heads, kv, act, window = gemma_shape(c)
    types = c.get("layer_types", None)
    if types is None:  # Gemma2Config's rule: every second layer is global
        types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(n)]
    _check_types(c, types, n)
    sliding = sliding_layers(c, types, window)
    final_cap = c.number("final_logit_softcapping", null=True)
    out = {"vocab_size": c.size("vocab_size"), "d_model": width, "n_layers": n,
           "max_seq_len": c.size("max_position_embeddings"),
           "tie_embeddings": c.flag("tie_word_embeddings"),
           "norm": {"kind": "rmsnorm", "eps": c.number("rms_norm_eps"), "position": position,
                    "unit_offset": True},
           "position": _rope(c),
           "attention": {"kind": "gqa", "n_heads": heads, "n_kv_heads": kv,
                         "head_dim": c.size("head_dim"), "bias": c.flag("attention_bias"),
                         "softcap": c.number("attn_logit_softcapping", null=True)},
           "ffn": {"kind": "geglu" if act == "gelu_tanh" else "swiglu",
                   "d_ff": c.size("intermediate_size"), "activation": act},
           # transformers: hidden_size**0.5 and query_pre_attn_scalar**-0.5, as Python floats
           "multipliers": {"embedding": width ** 0.5,
                           "attention": c.number("query_pre_attn_scalar") ** -0.5}}
    if final_cap is not None:
        out["head"] = {"softcap": final_cap}
    if sliding and len(sliding) < n:
        out["layers"] = [{"select": _select(sliding), "attention": {"window": window}}]
    elif sliding:
        out["attention"]["window"] = window
    return out


def read_gemma2(c: Keys) -> dict:
    if c.flag("use_bidirectional_attention", null=True):
        raise c.error("use_bidirectional_attention", "archscope models causal decoders only")
    return read(c)


def write(s: ModelSpec) -> dict:
    """Gemma2Config's keys for `s` (VaultGemma's too, less use_bidirectional_attention)."""
    if s.mults.embedding != s.d_model ** 0.5:
        raise SpecError(f"Gemma 2 scales embeddings by sqrt(hidden_size) = {s.d_model ** 0.5!r} "
                        f"exactly, not {s.mults.embedding!r}", key="multipliers.embedding")
    if s.ffn.kind not in ("geglu", "swiglu"):
        raise SpecError(f"Gemma 2's MLP is gated (geglu or swiglu), not {s.ffn.kind!r}",
                        key="ffn.kind")
    if s.position.kind != "rope":
        raise SpecError(f"Gemma 2 uses RoPE, not {s.position.kind!r}", key="position.kind")
    windows = [layer.window for layer in s.plan if layer.window]
    a = s.attention
    return {"vocab_size": s.vocab_size, "hidden_size": s.d_model,
            "num_hidden_layers": s.n_layers, "max_position_embeddings": s.max_seq_len,
            "tie_word_embeddings": s.tie_embeddings, "rms_norm_eps": s.norm.eps,
            "num_attention_heads": a.n_heads, "num_key_value_heads": a.kv_heads,
            "head_dim": a.head_dim, "attention_bias": a.bias, "intermediate_size": s.ffn.d_ff,
            "hidden_activation": _HF_ACT.get(s.ffn.activation, s.ffn.activation),
            "query_pre_attn_scalar": _attention_scalar(s),
            "rope_parameters": rope_parameters(s.position),
            "sliding_window": windows[0] if windows else None,
            "layer_types": ["sliding_attention" if layer.window else "full_attention"
                            for layer in s.plan],
            "attn_logit_softcapping": a.softcap, "final_logit_softcapping": s.lm_head.softcap}


def write_gemma2(s: ModelSpec) -> dict:
    return {**write(s), "use_bidirectional_attention": False}


def gemma_norms(position: str):
    """Which specs a Gemma 2 class claims: Gemma's (1 + weight) RMSNorms at `position`
    without QK-norm (Gemma 3's class always has one)."""
    return lambda s: (s.norm.kind == "rmsnorm" and bool(s.norm.unit_offset)
                      and s.norm.position == position and not s.attention.qk_norm)


GEMMA2 = GEMMA3_TEXT.but(
    "gemma2", "Gemma2ForCausalLM", read=read_gemma2, write=write_gemma2,
    exports=gemma_norms("sandwich"),
    weights=tuple(r for r in GEMMA3_TEXT.weights if "_norm." not in r.hf),
    spec_keys=GEMMA3_TEXT.key_table(**{"attention.softcap": "attn_logit_softcapping",
                                       "head.softcap": "final_logit_softcapping",
                                       "layers": "layer_types"}),
    names=("gemma",), doc="Gemma 3 less QK-norm, one RoPE + attention and final soft caps")
FAMILIES = (GEMMA2,)
