"""The numbers of the explainers' tables (../shared/seeds/), recomputed: JSON-ready dicts.

Every number comes from `model_record` (estimate/record.py), the estimators it uses, or a
what-if spec made through the same validation (`with_overrides`): MHA and MQA for a GQA model,
a two-matrix GELU MLP beside SwiGLU. Rendering is report/pages/document_tables.py.
"""

from __future__ import annotations

from archscope.estimate import model_record
from archscope.estimate.flops import decode_flops_by_layer
from archscope.estimate.rope import rope_table
from archscope.kinds import ffn_kind
from archscope.report.costs import REPORT_DTYPE
from archscope.report.records import architecture_record
from archscope.spec import with_overrides
from archscope.spec.schema import ModelSpec

# the models the documents name, as presets (claims/extract/names.py resolves the same spellings)
DOCUMENT_MODELS = ("llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "gpt2", "gpt3-175b",
                   "mistral-7b-v0.1", "deepseek-v2", "granite-3b-code")
CACHE_CONTEXTS = (1024, 4096)


def record_at(spec: ModelSpec, n: int = 4096):
    return model_record(spec, CACHE_CONTEXTS + ((n,) if n not in CACHE_CONTEXTS else ()),
                        weight_format=REPORT_DTYPE)


def attention_variants(spec: ModelSpec) -> list[dict]:
    """The model as MHA, GQA (as shipped) and MQA: projections, cache per token and per layer."""
    attn = spec.plan[0].attention
    rows = []
    for label, kv in (("MHA", attn.n_heads), ("GQA", attn.n_kv_heads), ("MQA", 1)):
        what_if = with_overrides(spec, [f"attention.n_kv_heads={kv}"])
        rec, arch = record_at(what_if), architecture_record(what_if)
        a, c1 = arch["attention"][0], rec.at(1024)
        rows.append({"variant": label, "kv_heads": kv, "q_heads": attn.n_heads,
                     "projections": a["projections"],
                     "kv_elements_per_token": a["kv_elements_per_token"],
                     "cache_per_layer_1024": c1.cache.bytes_per_layer[0],
                     "cache_1024": c1.cache.bytes, "cache_4096": rec.at(4096).cache.bytes,
                     "n_layers": spec.n_layers, "shipped": kv == attn.n_kv_heads})
    return rows


def ffn_variants(spec: ModelSpec) -> list[dict]:
    """SwiGLU as shipped beside a two-matrix GELU MLP of equal width and of equal parameters."""
    f = spec.plan[0].ffn
    cases = (("SwiGLU (as shipped)", []),
             ("GELU MLP, equal width", ["ffn.kind=mlp", "ffn.activation=gelu"]),
             ("GELU MLP, equal parameters", ["ffn.kind=mlp", "ffn.activation=gelu",
                                             f"ffn.d_ff={3 * f.d_ff // 2}"]))
    rows = []
    for label, sets in cases:
        what_if = with_overrides(spec, sets)
        ffn = architecture_record(what_if)["ffn"][0]
        rec = record_at(what_if)
        unit = what_if.plan[0].ffn
        matrices = [p for p in ffn_kind(unit.kind).parts(unit, spec.d_model) if p.macs]
        rows.append({"case": label, "d_ff": ffn["d_ff"], "activation": ffn["activation"],
                     "matrices": len(matrices), "params_per_layer": ffn["params_per_layer"], "params_total": rec.params.total,
            "decode_ffn_flops": rec.at(4096).decode.by_component["ffn"]})
    return rows


def rope_record(spec: ModelSpec) -> dict:
    """Every pair's frequency, wavelength and llama3/yarn band for the first RoPE layer."""
    layer = next(l for l in spec.plan if l.attention is not None and l.attention.rope)
    p = layer.position
    pairs, bands = rope_table(layer.attention.rotary_dim, p.theta, p.scaling)
    return {"model": spec.name, "dim": layer.attention.rotary_dim, "theta": p.theta,
            "pairs": [{"index": q.index, "base": q.base, "wavelength": q.wavelength,
                       "scaled": q.scaled, "scaled_wavelength": q.scaled_wavelength,
                       "band": q.band} for q in pairs],
            "bands": None if bands is None else {
                "kind": bands.kind, "factor": bands.factor,
                "original_context": bands.original_context, "high_below": bands.high_below,
                "low_above": bands.low_above, "ramp": bands.ramp,
                "spans": bands.spans}}


def layer_flops(spec: ModelSpec, contexts=CACHE_CONTEXTS) -> dict:
    """A decode step's FLOPs per layer (projections, scores, FFN) and the model's with and
    without lm_head, at each context."""
    out = {"model": spec.name, "n_layers": spec.n_layers, "at": []}
    rec = record_at(spec)
    for n in contexts:
        first = decode_flops_by_layer(spec, n)[0]
        whole = rec.at(n).decode
        out["at"].append({
            "context": n, "attention_proj": first["attention_proj"],
            "attention_scores": first["attention_qk"] + first["attention_av"],
            "ffn": first["ffn"], "layer": sum(first.values()),
            "total": whole.total, "lm_head": whole.by_component["lm_head"],
            "without_head": whole.total - whole.by_component["lm_head"]})
    return out


def shape_record(spec: ModelSpec) -> dict:
    """The 3B-vs-8B specification rows: shape, heads, FFN width and parameters."""
    arch, rec = architecture_record(spec), record_at(spec)
    a, f = arch["attention"][0], arch["ffn"][0]
    return {"model": spec.name, "d_model": spec.d_model, "n_layers": spec.n_layers,
            "vocab": spec.vocab_size, "d_ff": f["d_ff"], "expansion": f["expansion"],
            "q_heads": a["n_heads"], "kv_heads": a["kv_heads"], "head_dim": a["qk_head_dim"],
            "group": a["group_size"], "params": rec.params.total,
            "groups": rec.params.groups, "kv_bytes_per_token": rec.kv_cache_bytes_per_token}


def cache_rows(specs: dict[str, ModelSpec]) -> list[dict]:
    """The documents' models' KV cache at 4,096 tokens, and a windowed model without its window."""
    rows = []
    for name in (m for m in DOCUMENT_MODELS if m in specs):
        spec = specs[name]
        cases = [(name, spec)]
        if any(l.attention is not None and l.attention.window for l in spec.plan):
            cases.append((f"{name} without its window", with_overrides(
                spec, ["attention.window=null"])))
        for label, s in cases:
            rec, arch = record_at(s), architecture_record(s)
            a = arch["attention"][0]
            rows.append({"model": label, "variant": a["variant"], "kv_heads": a["kv_heads"],
                         "head_dim": a["qk_head_dim"], "n_layers": s.n_layers,
                         "elements_per_token": a["kv_elements_per_token"],
                         "window": a["window"], "bytes_4096": rec.at(4096).cache.bytes})
    return rows


def document_records(specs: dict[str, ModelSpec]) -> dict:
    """Everything document_tables.py renders, keyed by table."""
    get = specs.__getitem__
    return {
        "models": [m for m in DOCUMENT_MODELS if m in specs],
        "attention_variants": {m: attention_variants(get(m))
                               for m in ("llama-3.2-1b", "llama-3.2-3b") if m in specs},
        "ffn_variants": {m: ffn_variants(get(m)) for m in ("llama-3.2-1b",) if m in specs},
        "rope": [rope_record(get(m)) for m in ("llama-3.2-1b", "deepseek-v2") if m in specs],
        "layer_flops": [layer_flops(get(m)) for m in ("llama-3.2-3b", "llama-3.1-8b")
                        if m in specs],
        "kv_cache": cache_rows(specs),
        "shapes": [shape_record(get(m)) for m in ("llama-3.2-3b", "llama-3.1-8b") if m in specs],
    }
