"""One-line descriptions of spec components, for tables and `archscope show`."""

from __future__ import annotations

from archscope.report.fmt import layer_ranges
from archscope.spec.schema import AttentionSpec, FFNSpec, ModelSpec, NormSpec, PositionSpec

FFN_NAMES = {"mlp": "MLP", "swiglu": "SwiGLU", "moe": "MoE"}
NORM_NAMES = {"layernorm": "LayerNorm", "rmsnorm": "RMSNorm"}


def attention(attn: AttentionSpec) -> str:
    if attn.kind == "mla":
        q = f"q_lora_rank {attn.q_lora_rank}" if attn.q_lora_rank else "full-rank q"
        text = (f"MLA: {attn.n_heads} heads, kv_lora_rank {attn.kv_lora_rank}, {q}, "
                f"qk {attn.qk_nope_head_dim}+{attn.qk_rope_head_dim} (rope), v {attn.v_head_dim}")
    else:
        text = (f"{attn.variant}: {attn.n_heads} query / {attn.n_kv_heads} KV heads x "
                f"{attn.head_dim} (group {attn.group_size})")
    if attn.bias or attn.has_out_bias:
        text += ", bias " + ("q/k/v/o" if attn.bias and attn.has_out_bias else
                             "q/k/v" if attn.bias else "o")
    if attn.window:
        text += f", sliding window {attn.window}"
    return text


def ffn(f: FFNSpec, d_model: int) -> str:
    if f.kind == "moe":
        shared = f" + {f.n_shared_experts} shared" if f.shared_experts else ""
        r = f.routing
        routing = r.method + (f" ({r.topk_group} of {r.n_group} groups)"
                              if r.method == "group_limited_greedy" else "")
        return (f"MoE: {f.n_experts} experts, top-{f.top_k}{shared}, each SwiGLU "
                f"{d_model}->{f.d_expert}->{d_model}; router {routing}")
    bias = ", bias" if f.bias else ""
    return f"{FFN_NAMES[f.kind]} {d_model}->{f.d_ff}->{d_model} ({f.activation}{bias})"


def position(p: PositionSpec) -> str:
    if p.kind != "rope":
        return {"learned": "learned absolute", "none": "none"}[p.kind]
    text = f"RoPE theta={p.theta:g}"
    if p.scaling:
        text += f", {p.scaling.kind} scaling x{p.scaling.factor:g}"
    return text


def norm(n: NormSpec) -> str:
    bias = " with bias" if n.has_bias else ""
    return f"{NORM_NAMES[n.kind]}{bias}, eps {n.eps:g}, {n.position}-norm"


def layer_plan(spec: ModelSpec) -> list[dict]:
    """Layers grouped by identical structure: [{layers: '0-15', count, attention, ffn, note}]."""
    groups: dict[tuple, list[int]] = {}
    for layer in spec.plan:
        key = (attention(layer.attention), ffn(layer.ffn, spec.d_model), layer.note or "")
        groups.setdefault(key, []).append(layer.index)
    return [{"layers": layer_ranges(idx), "count": len(idx), "attention": a, "ffn": f, "note": n}
            for (a, f, n), idx in groups.items()]
