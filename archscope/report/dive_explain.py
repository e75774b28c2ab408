"""The deep dive's explaining records: the data flow with real shapes, the RoPE frequencies and
bands, and the per-layer decode FLOPs. JSON-ready dicts, rendered by pages/deep_dive_explain.py.

Shapes come from the spec's module tables (estimate.structure.layer_module_rows, checked
against the model built on meta by `show --verify` and the tests: each Linear's weight is
[out, in], so its activation goes [B, T, in] -> [B, T, out]); FLOPs from
estimate/flops.decode_flops_by_layer; frequencies from estimate/rope.rope_table.
"""

from __future__ import annotations

from archscope.estimate.flops import decode_flops_by_layer
from archscope.estimate.rope import rope_table
from archscope.report.fmt import layers_text
from archscope.spec.schema import ModelSpec

FLOW_BATCH, FLOW_TOKENS = 1, 4096
FLOPS_CONTEXTS = (4096, 32768)
ROPE_ROWS = 9  # pairs shown, evenly spread from the fastest to the slowest


def _shape(*dims: int) -> list[int]:
    return list(dims)


def module_flow(row: dict, b: int, t: int, top_k: int | None) -> dict | None:
    """One module's input and output shapes, read off its weights."""
    w = row["weights"]
    if "weight" in w and len(w["weight"]) == 2:  # Linear, router: [out, in]
        out, inp = w["weight"]
        return {"module": row["module"], "in": _shape(b, t, inp), "out": _shape(b, t, out)}
    if "weight" in w and len(w["weight"]) == 1:  # a norm
        return {"module": row["module"], "in": _shape(b, t, w["weight"][0]),
                "out": _shape(b, t, w["weight"][0])}
    if "weight" in w and len(w["weight"]) == 3:  # depthwise conv [C, 1, K] over time
        return {"module": row["module"], "in": _shape(b, w["weight"][0], t),
                "out": _shape(b, w["weight"][0], t), "note": f"kernel {w['weight'][2]}"}
    if len(w) and all(len(s) == 3 for s in w.values()):  # stacked experts [E, out, in]
        first, last = list(w.values())[0], list(w.values())[-1]
        routed = b * t * (top_k or 1)
        return {"module": row["module"], "in": _shape(routed, first[2]),
                "out": _shape(routed, last[1]),
                "note": f"{first[0]} experts; each token's {top_k} chosen ones"}
    return None


def flow_record(spec: ModelSpec, modules: list[dict]) -> dict:
    """The data flow at batch FLOW_BATCH x FLOW_TOKENS (or the context, if shorter)."""
    b, t = FLOW_BATCH, min(FLOW_TOKENS, spec.max_seq_len)
    groups = []
    for group in modules:
        first = spec.plan[int(group["layers"].split(",")[0].split("-")[0])]
        top_k = first.ffn.top_k if first.ffn is not None else None
        rows = [f for f in (module_flow(r, b, t, top_k) for r in group["rows"]) if f]
        a = first.attention
        scores = None if a is None else {"heads": a.n_heads, "keys": a.keys_read(t),
                                         "head_dim": a.qk_head_dim,
                                         "shape": _shape(b, a.n_heads, t, a.keys_read(t))}
        groups.append({"layers": group["layers"], "count": group["count"], "rows": rows,
                       "scores": scores})
    return {"batch": b, "tokens": t, "d_model": spec.d_model, "vocab": spec.vocab_size,
            "groups": groups}


def rope_record(spec: ModelSpec) -> list[dict]:
    """Per distinct rotation (Gemma 3's two thetas): a spread of pairs and the scaling's bands."""
    seen, out = set(), []
    for layer in spec.plan:
        a = layer.attention
        if a is None or not a.rope or spec.position.kind != "rope":
            continue
        key = (a.rotary_dim, layer.position)
        if key in seen:
            continue
        seen.add(key)
        p = layer.position
        pairs, bands = rope_table(a.rotary_dim, p.theta, p.scaling)
        step = max(1, (len(pairs) - 1) // (ROPE_ROWS - 1))
        picked = sorted({*range(0, len(pairs), step), len(pairs) - 1})
        idx = [l.index for l in spec.plan if l.attention is not None and l.attention.rope
               and (l.attention.rotary_dim, l.position) == key]
        out.append({
            "layers": layers_text(idx), "count": len(idx), "dim": a.rotary_dim,
            "head_dim": a.qk_head_dim, "theta": p.theta,
            "counts": {k: sum(q.band == k for q in pairs) for k in ("high", "medium", "low")},
            "pairs": [{"index": q.index, "base": q.base, "wavelength": q.wavelength,
                       "scaled_wavelength": q.scaled_wavelength, "band": q.band}
                      for q in (pairs[i] for i in picked)],
            "bands": None if bands is None else {
                "kind": bands.kind, "factor": bands.factor,
                "original_context": bands.original_context, "high_below": bands.high_below,
                "low_above": bands.low_above, "ramp": bands.ramp,
                "spans": bands.spans}})
    return out


def layer_flops_record(spec: ModelSpec, modules: list[dict]) -> list[dict]:
    """Decode FLOPs of one layer of each structure group, by component, at FLOPS_CONTEXTS."""
    by_context = {n: decode_flops_by_layer(spec, n) for n in FLOPS_CONTEXTS}
    out = []
    for group in modules:
        first = int(group["layers"].split(",")[0].split("-")[0])
        out.append({"layers": group["layers"], "count": group["count"],
                    "at": [{"context": n, "by_component": by_context[n][first]}
                           for n in FLOPS_CONTEXTS]})
    return out


def explain_record(spec: ModelSpec, modules: list[dict]) -> dict:
    return {"flow": flow_record(spec, modules), "rope": rope_record(spec),
            "layer_flops": layer_flops_record(spec, modules)}
