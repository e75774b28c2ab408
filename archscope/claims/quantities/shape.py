"""Shape quantities for claims: model dimensions, attention heads and widths, FFN and MoE sizes.

Each is read off the spec (per layer where layers differ: give the condition `layer`).
"""

from __future__ import annotations

from archscope.kinds import ffn_kind
from archscope.claims.quantities.registry import attn_of, gqa_only, quantity, uniform

# --- model --------------------------------------------------------------------------------

for _name, _doc in (("vocab_size", "Tokens in the vocabulary."),
                   ("d_model", "Hidden size (embedding dim)."),
                   ("n_layers", "Decoder layers."),
                   ("max_seq_len", "Context length (max_position_embeddings).")):
    quantity(_name, "count", _doc)(lambda spec, _n=_name: getattr(spec, _n))


# --- attention ----------------------------------------------------------------------------

@quantity("n_heads", "count")
def n_heads(spec, layer=None):
    """Query heads."""
    return attn_of(spec, layer).n_heads


@quantity("n_kv_heads", "count")
def n_kv_heads(spec, layer=None):
    """Key/value heads (MLA: every head has its own decompressed K/V, so n_heads)."""
    return attn_of(spec, layer).kv_heads


@quantity("head_dim", "count")
def head_dim(spec, layer=None):
    """Per-head dimension of a GQA/MHA/MQA layer."""
    attn = attn_of(spec, layer)
    gqa_only(attn, "head_dim")
    return attn.head_dim


@quantity("group_size", "ratio")
def group_size(spec, layer=None):
    """Query heads per KV head ("4:1"); 1 for MHA and MLA."""
    return attn_of(spec, layer).group_size


@quantity("q_width", "count")
def q_width(spec, layer=None):
    """q_proj output width: n_heads x q/k head dim."""
    attn = attn_of(spec, layer)
    return attn.n_heads * attn.qk_head_dim


@quantity("kv_width", "count")
def kv_width(spec, layer=None):
    """k_proj (or v_proj) output width: n_kv_heads x head_dim."""
    attn = attn_of(spec, layer)
    gqa_only(attn, "kv_width")
    return attn.n_kv_heads * attn.head_dim


for _name in ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
              "v_head_dim", "qk_head_dim"):
    quantity(_name, "count", f"MLA: {_name} (qk_head_dim also for GQA: head_dim).")(
        lambda spec, layer=None, _n=_name: getattr(attn_of(spec, layer), _n))


@quantity("sliding_window", "count")
def sliding_window(spec, layer=None):
    """Keys a query reads in a sliding-window layer (0: no window)."""
    return attn_of(spec, layer).window or 0


# --- FFN and MoE --------------------------------------------------------------------------

def _ffn(spec, layer):
    return uniform(spec, "the FFN", lambda e: e.ffn, layer)


@quantity("d_ff", "count")
def d_ff(spec, layer=None):
    """Intermediate size of a dense FFN (MoE: the dense layer's, with `layer`; else d_expert)."""
    ffn = _ffn(spec, layer)
    return ffn_kind(ffn.kind).hidden(ffn)


@quantity("expansion_ratio", "ratio")
def expansion_ratio(spec, layer=None):
    """d_ff / d_model (MoE layers: one expert's d_expert / d_model)."""
    return d_ff(spec, layer) / spec.d_model


for _name in ("n_experts", "top_k", "d_expert", "n_shared_experts"):
    quantity(_name, "count", f"MoE: {_name} (0 for a dense FFN).")(
        lambda spec, layer=None, _n=_name: getattr(_ffn(spec, layer), _n) or 0)
