"""One model's architecture facts as plain JSON-ready records: what the comparison tables show.

Everything is read from the spec or computed by the estimators; nothing is rendered here.
Layers that differ (DeepSeek's dense first layer, GPT-3's local layers) give one record per
distinct component, each with the layers it covers.
"""

from __future__ import annotations

import dataclasses

from archscope.estimate import (decompressed_elements_per_token, kv_elements_per_token,
                                mha_elements_per_token)
from archscope.kinds import attention_kind, ffn_kind, mixer_kind
from archscope.report.fmt import layers_label, layers_text
from archscope.spec.hf_export import model_family
from archscope.spec.schema import AttentionSpec, FFNSpec, ModelSpec


def distinct(spec: ModelSpec, part: str) -> list[tuple[object, list[int]]]:
    """[(component, layer indices)] for each distinct `attention`, `state` (a state mixer) or
    `ffn` of the plan; layers without that component are in none. A layer that runs a shared
    block (spec.shared) runs the model's attention and FFN."""
    groups: dict[object, list[int]] = {}
    shared = spec.shared.at if spec.shared is not None and part != "state" else ()
    for layer in spec.plan:
        component = getattr(layer, part) or (getattr(spec, part) if layer.index in shared
                                             else None)
        if component is not None:
            groups.setdefault(component, []).append(layer.index)
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


def attention_record(attn: AttentionSpec, indices: list[int], d_model: int) -> dict:
    """Sizes and wording of one distinct attention; the texts come from its kind's entry."""
    kind = attention_kind(attn.kind)
    return {
        "layers": layers_text(indices), "count": len(indices),
        "kind": attn.kind, "variant": attn.variant,
        "label": kind.label(attn), "heads_text": kind.heads(attn),
        "describe": kind.describe(attn), "explain": kind.explain(attn, d_model),
        "cache_formula": kind.cache_formula(attn),
        "n_heads": attn.n_heads, "kv_heads": attn.kv_heads, "group_size": attn.group_size,
        "qk_head_dim": attn.qk_head_dim, "v_head_dim": attn.value_head_dim,
        "window": attn.window, "chunk": attn.chunk, "bias": attn.bias, "out_bias": attn.has_out_bias,
        "kv_lora_rank": attn.kv_lora_rank, "qk_rope_head_dim": attn.qk_rope_head_dim,
        "q_lora_rank": attn.q_lora_rank,
        "kv_elements_per_token": kv_elements_per_token(attn),
        "mha_elements_per_token": mha_elements_per_token(attn),
        "decompressed_elements_per_token": decompressed_elements_per_token(attn),
        "compressed_cache": kind.compressed_cache,
        # q, k and v apart even when one qkv_proj holds them: the table compares projections
        "projections": _short(kind.parts(dataclasses.replace(attn, fused_qkv=None), d_model)),
        "mha_projections": kind.mha_projections(attn, d_model),
    }


def ffn_record(ffn: FFNSpec, indices: list[int], d_model: int) -> dict:
    """Sizes; `expansion` is the hidden width over d_model (per expert for MoE)."""
    kind = ffn_kind(ffn.kind)
    parts = kind.parts(ffn, d_model)
    return {
        "layers": layers_text(indices), "count": len(indices),
        "kind": ffn.kind, "display": kind.display, "label": kind.label(ffn),
        "describe": kind.describe(ffn, d_model), "explain": kind.explain(ffn, d_model),
        "activation": ffn.activation, "bias": ffn.bias,
        "d_ff": ffn.d_ff, "d_expert": ffn.d_expert, "n_experts": ffn.n_experts,
        "top_k": ffn.top_k, "n_shared_experts": ffn.n_shared_experts,
        "router": ffn.routing.method if ffn.n_experts else None,
        "hidden": kind.hidden(ffn), "expansion": kind.hidden(ffn) / d_model,
        "params_per_layer": sum(p.params * p.copies for p in parts),
        "active_params_per_layer": sum(p.params * p.active for p in parts),
    }


def mixer_record(mixer, indices: list[int], d_model: int) -> dict:
    """A state mixer's wording and size (its constant state is the cost record's)."""
    kind = mixer_kind(mixer.kind)
    return {"layers": layers_text(indices), "count": len(indices), "kind": mixer.kind,
            "display": kind.display, "label": kind.label(mixer), "describe": kind.describe(mixer),
            "explain": kind.explain(mixer, d_model),
            "params_per_layer": sum(p.params * p.copies for p in kind.parts(mixer, d_model))}


def architecture_record(spec: ModelSpec) -> dict:
    """The spec's facts: shape, attention and FFN per distinct layer kind, norm, position."""
    p, scaling = spec.position, spec.position.scaling
    return {
        "name": spec.name, "family": model_family(spec), "source": spec.source,
        "vocab_size": spec.vocab_size, "d_model": spec.d_model, "n_layers": spec.n_layers,
        "max_seq_len": spec.max_seq_len, "tie_embeddings": spec.tie_embeddings,
        "attention": [attention_record(a, idx, spec.d_model)
                      for a, idx in distinct(spec, "attention")],
        "mixers": [mixer_record(m, idx, spec.d_model) for m, idx in distinct(spec, "state")],
        "ffn": [ffn_record(f, idx, spec.d_model) for f, idx in distinct(spec, "ffn")],
        "norm": {"kind": spec.norm.kind, "position": spec.norm.position,
                 "bias": spec.norm.has_bias, "eps": spec.norm.eps},
        "position": {"kind": p.kind, "theta": p.theta,
                     "scaling": None if scaling is None else {
                         k: v for k, v in dataclasses.asdict(scaling).items() if v is not None}},
        "multipliers": None if spec.multipliers is None else dataclasses.asdict(spec.multipliers),
        "notes": layer_notes(spec),
    }


def structure_groups(spec: ModelSpec) -> list[dict]:
    """Layers grouped by identical (attention, ffn), in plan order, with their notes; titled by
    each component's kind."""
    groups: dict[tuple, list[int]] = {}
    for layer in spec.plan:
        groups.setdefault((layer.attention, layer.state, layer.ffn), []).append(layer.index)
    out = []
    for (attn, state, ffn), idx in groups.items():
        by_note: dict[str, list[int]] = {}
        for i in idx:  # a note may cover only some of the group (GPT-3's odd layers)
            if spec.plan[i].note:
                by_note.setdefault(spec.plan[i].note, []).append(i)
        notes = [f"{layers_label(sub)}: {note}" for note, sub in by_note.items()]
        out.append({"layers": layers_text(idx), "count": len(idx), "first": idx[0],
                    "attention": (attention_kind(attn.kind).title(attn) if attn else
                                  mixer_kind(state.kind).title(state) if state else "no mixer"),
                    "ffn": ffn_kind(ffn.kind).title(ffn) if ffn else "no FFN", "notes": notes})
    return out


def module_groups(modules: dict[tuple[int, ...], list[dict]]) -> list[dict]:
    """estimate.structure.layer_module_rows grouped for the deep dive's per-layer tables."""
    return [{"layers": layers_text(list(idx)), "count": len(idx), "rows": rows}
            for idx, rows in modules.items()]
