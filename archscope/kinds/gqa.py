"""Grouped-query attention (MHA when n_kv_heads == n_heads, MQA when 1), optionally windowed.

Modules as transformers' Llama: q_proj d -> n_heads*head_dim, k_proj and v_proj d ->
n_kv_heads*head_dim (bias when attention.bias), o_proj n_heads*head_dim -> d (bias when
attention.has_out_bias). With attention.qk_norm, norms q_norm and k_norm (weights only, no
matmul) normalise q and k before RoPE: `head` over each head's head_dim (Qwen3: two weights of
head_dim), `per_head` over each head with a weight row per head (Cohere: n_heads x head_dim and
n_kv_heads x head_dim), `full` over the whole projection (OLMo 2: n_heads*head_dim and
n_kv_heads*head_dim); RMSNorms, or LayerNorms with attention.qk_norm_kind layernorm (Cohere,
Phi-2), with a bias as large as the weight where attention.qk_norm_bias says (Phi-2); after
RoPE instead where attention.qk_norm_after_rope says (Hunyuan; the same weights).
With attention.rope false the layer is NoPE (SmolLM3): q and k are not rotated (no weights
change); attention.rotary_fraction rotates only the first dims of each head (GLM-4.5; none
change either). With attention.sinks (gpt-oss) each query head has one learned logit that
joins the softmax's denominator and is then dropped: n_heads parameters (`sinks`), no matmul
(it meets no key), no cache (it is not a token). With attention.output_gate (Qwen3-Next)
q_proj is twice as wide: each head's query rows, then as many gate rows, and
sigmoid(gate) * attention output goes into o_proj (the gate is never cached). With
attention.sub_norm (BitNet) an RMSNorm of n_heads*head_dim, attn_sub_norm, normalises the
attention output before o_proj: weights only. Llama 4 adds a weightless L2 QK-norm after
RoPE (qk_norm l2), chunked attention (attention.chunk) and a temperature on NoPE layers'
queries (Ministral 3's on every layer, counted from the position: temperature_offset 0): none
has weights or matmuls. The cache holds one key and one value per KV head per
token: 2 * n_kv_heads * head_dim elements per layer; a sliding-window layer at most `window`
tokens, a chunked layer at most `chunk`.
"""

from __future__ import annotations

import dataclasses

from archscope.kinds.registry import register
from archscope.kinds.base import AttentionKind, Part, Weight, linear, norm, own_weights
from archscope.kinds.wording import (attention_extras, rope_text, scale_text, window_label,
                                     window_short)
from archscope.spec.attention import QK_NORMS_WITH_WEIGHTS
from archscope.units import bias_text, commas


QK_NORM_TEXT = {"head": "per-head QK-norm", "full": "full-width QK-norm",
                "per_head": "per-head QK-norm, a weight per head",
                "l2": "L2 QK-norm after RoPE"}


def qk_norm_widths(attn) -> tuple[int, int]:
    """The widths q_norm and k_norm normalise over (the weight of each group they norm)."""
    if attn.qk_norm == "full":
        return attn.n_heads * attn.head_dim, attn.n_kv_heads * attn.head_dim
    return attn.head_dim, attn.head_dim


def qk_norm_name(attn) -> str:
    """The class of q_norm and k_norm (nn/norms.py's qk_norm), for the module tables."""
    if attn.qk_norm == "per_head" or attn.qk_norm_kind == "layernorm":
        return "HeadwiseNorm"
    return "RMSNorm"


def qk_norm_parts(attn) -> list[Part]:
    """q_norm and k_norm: a weight (and a bias, attention.qk_norm_bias) per group they norm."""
    if attn.qk_norm not in QK_NORMS_WITH_WEIGHTS:  # Llama 4's l2 has no weight
        return []
    names = ("weight", "bias") if attn.qk_norm_bias else ("weight",)
    out = []
    for which, width, heads in (("q_norm", qk_norm_widths(attn)[0], attn.n_heads),
                                ("k_norm", qk_norm_widths(attn)[1], attn.n_kv_heads)):
        shape = (heads, width) if attn.qk_norm == "per_head" else (width,)
        size = shape[0] * shape[-1] if len(shape) == 2 else width
        out.append(Part(f"attention.{which}", size * len(names), weights=tuple(
            Weight(which, qk_norm_name(attn), n, shape) for n in names)))
    return out


def parts(attn, d: int):
    q_width = attn.n_heads * attn.head_dim
    q_rows = 2 * q_width if attn.output_gate else q_width  # each head's query, then its gate
    kv_width = attn.n_kv_heads * attn.head_dim
    qk_norms = qk_norm_parts(attn)
    qkv = ([linear("attention.qkv_proj", d, q_rows + 2 * kv_width, attn.bias)] if attn.fused_qkv
           else [linear("attention.q_proj", d, q_rows, attn.bias),
                 linear("attention.k_proj", d, kv_width, attn.bias),
                 linear("attention.v_proj", d, kv_width, attn.bias)])
    sinks = own_weights("attention", "GQAAttention", {"sinks": attn.n_heads}) if attn.sinks else []
    sub_norm = [norm("attention.attn_sub_norm", q_width)] if attn.sub_norm else []  # BitNet's
    return [*qkv,
            *qk_norms,
            linear("attention.o_proj", q_width, d, attn.has_out_bias), *sinks, *sub_norm]


def qk_text(attn, lead: str = ", ") -> str:
    text = lead + "NoPE" if not attn.rope else ""
    if attn.rope and attn.rotary_fraction:  # partial RoPE (GLM-4.5): the rest pass through
        text += f"{lead}RoPE on {attn.rotary_dim} of {attn.head_dim} dims"
    if attn.qk_norm:
        kind = " (LayerNorm" + (" with bias)" if attn.qk_norm_bias else ")")
        text += lead + QK_NORM_TEXT[attn.qk_norm] + (
            kind if attn.qk_norm_kind == "layernorm" else "") + (
            " after RoPE" if attn.qk_norm_after_rope else "")
    text += lead + "attention sinks" if attn.sinks else ""
    text += lead + "sigmoid output gate" if attn.output_gate else ""
    text += f"{lead}logits soft-capped at {attn.softcap:g}" if attn.softcap else ""
    text += f"{lead}q, k, v clipped to ±{attn.clip_qkv:g}" if attn.clip_qkv else ""
    text += f"{lead}RMSNorm before o_proj" if attn.sub_norm else ""
    return text + (lead + "fused qkv_proj" if attn.fused_qkv else "")


def cache_elements(attn) -> int:
    return 2 * attn.n_kv_heads * attn.head_dim


def mha_projections(attn, d: int) -> dict[str, int]:
    """The same layer's projections with n_kv_heads = n_heads (norms left out), q, k and v
    apart even when fused (the comparison is per projection; a fusion changes no count)."""
    mha = dataclasses.replace(attn, n_kv_heads=attn.n_heads, fused_qkv=None, sinks=None,
                              output_gate=None, sub_norm=None)
    return {p.name.split(".", 1)[1]: p.params for p in parts(mha, d) if "norm" not in p.name}


def describe(attn) -> str:
    return (f"{attn.variant}: {attn.n_heads} query / {attn.n_kv_heads} KV heads x "
            f"{attn.head_dim} (group {attn.group_size})") + attention_extras(attn) + qk_text(attn)


def title(a) -> str:
    return (f"{a.variant} self-attention: {a.n_heads} query / {a.n_kv_heads} KV heads × "
            f"{a.head_dim}" + qk_text(a))


def _draw_qk_norm(g, a, q: str, k: str) -> tuple[str, str]:
    """q_norm and k_norm right after the projections, before RoPE (transformers' order), or
    after RoPE where qk_norm_after_rope (the caller passes the RoPE node as `q` and `k`);
    Llama 4's weightless l2 is named on the RoPE node instead, which it follows."""
    if a.qk_norm not in QK_NORMS_WITH_WEIGHTS:
        return q, k
    q_w, k_w = (commas(w) for w in qk_norm_widths(a))
    per = {"head": " on each head", "per_head": " on each head, its own weight"}.get(
        a.qk_norm, " over all heads")
    kind = ("LayerNorm" if a.qk_norm_kind == "layernorm" else "RMSNorm") + bias_text(
        bool(a.qk_norm_bias))
    g.edge(q, g.node("q_norm", f"q_norm<br/>{kind}({q_w}){per}"))
    g.edge(k, g.node("k_norm", f"k_norm<br/>{kind}({k_w}){per}"))
    return "q_norm", "k_norm"


def draw(g, spec, a):
    d, hd = commas(spec.d_model), commas(a.head_dim)
    if a.fused_qkv:  # one matrix; its output splits into q, k, v (rows in that order)
        q = k = v = g.node("qkv", f"qkv_proj{bias_text(a.bias)}<br/>{d} → ({a.n_heads} + 2×"
                                  f"{a.n_kv_heads})×{hd}, split q, k, v")
    else:
        gate = f" + {a.n_heads}×{hd} gate" if a.output_gate else ""
        q = g.node("q", f"q_proj{bias_text(a.bias)}<br/>{d} → {a.n_heads}×{hd}{gate}")
        k = g.node("k", f"k_proj{bias_text(a.bias)}<br/>{d} → {a.n_kv_heads}×{hd}")
        v = g.node("v", f"v_proj{bias_text(a.bias)}<br/>{d} → {a.n_kv_heads}×{hd}")
    window = (f"<br/>holds the last {commas(a.window)} tokens" if a.window else
              f"<br/>holds the current chunk of {commas(a.chunk)}" if a.chunk else "")
    cache = g.store("cache", f"KV cache<br/>2 × {a.n_kv_heads} × {hd} per token{window}")
    span = (f"<br/>sliding window {commas(a.window)}" if a.window else
            f"<br/>within chunks of {commas(a.chunk)}" if a.chunk else "")
    share = (f"{a.group_size} query heads share each KV head" if a.group_size > 1
             else "one KV head per query head")
    sink = "<br/>+ a learned sink logit per head in the softmax" if a.sinks else ""
    sdpa = g.node("sdpa", f"causal softmax(q·kᵀ {scale_text(spec, a.head_dim)})·v<br/>"
                          f"{share}{span}{sink}")
    gated = "× sigmoid(gate), then " if a.output_gate else ""
    gated += "attn_sub_norm (RMSNorm), then " if a.sub_norm else ""
    o = g.node("o_proj", f"{gated}o_proj{bias_text(a.has_out_bias)}<br/>{a.n_heads}×{hd} → {d}")
    entry = list(dict.fromkeys([q, k, v]))
    rotated = spec.position.kind == "rope" and a.rope  # a NoPE layer: no rotation node
    if not (rotated and a.qk_norm_after_rope):
        q, k = _draw_qk_norm(g, a, q, k)
    if rotated:
        l2 = ", then L2 norm" if a.qk_norm == "l2" else ""
        rope = g.node("rope", f"{rope_text(spec)}<br/>on q and k{l2}")
        g.edge(q, rope, "q")
        g.edge(k, rope, "k")
        q = k = rope
        if a.qk_norm_after_rope:
            q, k = _draw_qk_norm(g, a, rope, rope)
        g.edge(q, sdpa, "q")
        g.edge(k, cache, "k")
    else:
        g.edge(q, sdpa, "q")
        g.edge(k, cache, "k")
    g.edge(v, cache, "v")
    g.edge(cache, sdpa, "k, v")
    g.edge(sdpa, o)
    return entry, o


def explain(a, d: int) -> str:
    """What the layer computes, with its sizes, and what its KV sharing saves over MHA."""
    hd, h, kv, g = a.head_dim, a.n_heads, a.n_kv_heads, a.group_size
    if kv == h:
        lead = f"Multi-head attention (MHA): each of the {h} query heads has its own key and value head"
    elif kv == 1:
        lead = f"Multi-query attention (MQA): all {h} query heads share one key and value head"
    else:
        lead = (f"Grouped-query attention (GQA): {h} query heads share {kv} key/value heads, "
                f"each KV head serving a group of {h} / {kv} = {g} query heads")
    text = (f"{lead}, all of {hd} dims. q = x·W_q ({commas(d)} → {h}×{hd}), k = x·W_k and "
            f"v = x·W_v ({commas(d)} → {kv}×{hd} each); per query head i, "
            f"o_i = softmax(q_i·k_{{g(i)}}ᵀ / √{hd})·v_{{g(i)}} over the keys it may see; "
            f"out = concat(o)·W_o ({h}×{hd} → {commas(d)}).")
    ours, mha = 2 * kv * hd, 2 * h * hd
    text += f" A token caches 2 × {kv} × {hd} = {commas(ours)} elements per layer"
    if g > 1:
        text += (f", where MHA would cache 2 × {h} × {hd} = {commas(mha)}: {g}× less "
                 f"({100 * (1 - ours / mha):.0f}% saved), and k_proj + v_proj hold "
                 f"{commas(2 * d * kv * hd)} parameters against MHA's {commas(2 * d * h * hd)}.")
    else:
        text += "; every query head has its own, so nothing is shared or saved."
    if a.window:
        text += f" A sliding window keeps each query to the last {commas(a.window)} keys, which caps the cache."
    if a.chunk:
        text += f" Chunked attention: a query sees only its own chunk of {commas(a.chunk)} tokens."
    return text + (f" Also: {qk_text(a).removeprefix(', ')}." if qk_text(a) else "")


register(AttentionKind(
    name="gqa", module="archscope.nn.attention:GQAAttention", parts=parts,
    cache_elements=cache_elements, decompressed_elements=cache_elements,
    pair_dims=lambda a, convention: (a.head_dim, a.head_dim),
    mha_projections=mha_projections, describe=describe,
    cache_formula=lambda a: f"2 × {a.n_kv_heads} × {a.head_dim}",
    label=lambda a: a.variant + window_label(a) + qk_text(a, " + "),
    heads=lambda a: f"{a.n_heads}/{a.n_kv_heads}",
    title=title,
    short=lambda a: f"{a.variant} {a.n_heads}/{a.n_kv_heads} heads" + window_short(a),
    draw=draw, explain=explain))
