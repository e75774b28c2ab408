"""One model's architecture facts as plain JSON-ready records: what the comparison tables show.

Everything is read from the spec or computed by the estimators; nothing is rendered here.
Layers that differ (DeepSeek's dense first layer, GPT-3's local layers) give one record per
distinct component, each with the layers it covers.
"""

from __future__ import annotations

import dataclasses

from archscope.estimate import (decompressed_elements_per_token, kv_elements_per_token,
                                mha_elements_per_token)
from archscope.estimate.structure import ATTENTION_PARTS, ffn_parts
from archscope.report.fmt import layer_ranges
from archscope.spec.schema import AttentionSpec, FFNSpec, ModelSpec


def layers_text(indices: list[int]) -> str:
    """[0, 2, 4, ..., 94] -> '0, 2, ..., 94' (a stride); [0, 1, 2, 5] -> '0-2, 5'."""
    steps = {b - a for a, b in zip(indices, indices[1:])}
    if len(indices) > 3 and len(steps) == 1 and steps != {1}:
        return f"{indices[0]}, {indices[1]}, ..., {indices[-1]}"
    return layer_ranges(indices)


def distinct(spec: ModelSpec, part: str) -> list[tuple[object, list[int]]]:
    """[(component, layer indices)] for each distinct `attention` or `ffn` of the plan."""
    groups: dict[object, list[int]] = {}
    for layer in spec.plan:
        groups.setdefault(getattr(layer, part), []).append(layer.index)
    return list(groups.items())


def layer_notes(spec: ModelSpec) -> list[dict]:
    """The plan's notes (what the spec cannot express), with the layers they apply to."""
    notes: dict[str, list[int]] = {}
    for layer in spec.plan:
        if layer.note:
            notes.setdefault(layer.note, []).append(layer.index)
    return [{"layers": layers_text(idx), "count": len(idx), "note": note}
            for note, idx in notes.items()]


def _short(parts) -> dict[str, int]:
    """Projection parameters by module name ('attention.q_proj' -> 'q_proj'), norms left out."""
    return {p.name.split(".", 1)[1]: p.params for p in parts if "norm" not in p.name}


def mha_projections(attn: AttentionSpec, d_model: int) -> dict[str, int]:
    """What the same layer would hold if every query head had its own key and value.

    GQA: the layer with n_kv_heads = n_heads. MLA: plain per-head projections with the same head
    sizes (q/k: qk_nope + qk_rope, v: v_head_dim), no latent.
    """
    if attn.kind == "gqa":
        return _short(ATTENTION_PARTS["gqa"](dataclasses.replace(attn, n_kv_heads=attn.n_heads),
                                             d_model))
    h = attn.n_heads
    return {"q_proj": d_model * h * attn.qk_head_dim, "k_proj": d_model * h * attn.qk_head_dim,
            "v_proj": d_model * h * attn.value_head_dim,
            "o_proj": h * attn.value_head_dim * d_model}


def attention_record(attn: AttentionSpec, indices: list[int], d_model: int) -> dict:
    mla = attn.kind == "mla"
    return {
        "layers": layers_text(indices), "count": len(indices),
        "kind": attn.kind, "variant": attn.variant,
        "n_heads": attn.n_heads, "kv_heads": attn.kv_heads, "group_size": attn.group_size,
        "qk_head_dim": attn.qk_head_dim, "v_head_dim": attn.value_head_dim,
        "window": attn.window, "bias": attn.bias, "out_bias": attn.has_out_bias,
        "q_lora_rank": attn.q_lora_rank if mla else None,
        "kv_lora_rank": attn.kv_lora_rank if mla else None,
        "qk_rope_head_dim": attn.qk_rope_head_dim if mla else None,
        "kv_elements_per_token": kv_elements_per_token(attn),
        "mha_elements_per_token": mha_elements_per_token(attn),
        "decompressed_elements_per_token": decompressed_elements_per_token(attn),
        "projections": _short(ATTENTION_PARTS[attn.kind](attn, d_model)),
        "mha_projections": mha_projections(attn, d_model),
    }


def ffn_record(ffn: FFNSpec, indices: list[int], d_model: int) -> dict:
    """Sizes; `expansion` is the hidden width over d_model (per expert for MoE)."""
    parts = ffn_parts(ffn, d_model)
    hidden = ffn.d_expert if ffn.kind == "moe" else ffn.d_ff
    return {
        "layers": layers_text(indices), "count": len(indices),
        "kind": ffn.kind, "activation": ffn.activation, "bias": ffn.bias,
        "d_ff": ffn.d_ff, "d_expert": ffn.d_expert, "n_experts": ffn.n_experts,
        "top_k": ffn.top_k, "n_shared_experts": ffn.n_shared_experts,
        "router": ffn.routing.method if ffn.kind == "moe" else None,
        "expansion": hidden / d_model,
        "params_per_layer": sum(p.params * p.copies for p in parts),
        "active_params_per_layer": sum(p.params * p.active for p in parts),
    }


def architecture_record(spec: ModelSpec) -> dict:
    """The spec's facts: shape, attention and FFN per distinct layer kind, norm, position."""
    p, scaling = spec.position, spec.position.scaling
    return {
        "name": spec.name, "source": spec.source,
        "vocab_size": spec.vocab_size, "d_model": spec.d_model, "n_layers": spec.n_layers,
        "max_seq_len": spec.max_seq_len, "tie_embeddings": spec.tie_embeddings,
        "attention": [attention_record(a, idx, spec.d_model)
                      for a, idx in distinct(spec, "attention")],
        "ffn": [ffn_record(f, idx, spec.d_model) for f, idx in distinct(spec, "ffn")],
        "norm": {"kind": spec.norm.kind, "position": spec.norm.position,
                 "bias": spec.norm.has_bias, "eps": spec.norm.eps},
        "position": {"kind": p.kind, "theta": p.theta,
                     "scaling": None if scaling is None else {
                         k: v for k, v in dataclasses.asdict(scaling).items() if v is not None}},
        "multipliers": None if spec.multipliers is None else dataclasses.asdict(spec.multipliers),
        "notes": layer_notes(spec),
    }
