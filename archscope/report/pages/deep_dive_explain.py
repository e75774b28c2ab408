"""The deep dive's explaining sections: the data flow with real shapes, what each component does
(its kind's wording, with this model's numbers), RoPE's frequencies and bands, and the
per-layer decode FLOPs. Pure rendering of dive_explain.py's and records.py's dicts."""

from __future__ import annotations

from archscope.report import wording
from archscope.report.fmt import commas, layers_label, num
from archscope.report.pages.markdown import DASH, section, table


def shape(dims: list[int]) -> str:
    return "[" + ", ".join(commas(d) for d in dims) + "]"


def flow(f: dict, tied: bool) -> str:
    b, t, d = f["batch"], f["tokens"], f["d_model"]
    cols = [("module", lambda r: f"`{r['module']}`", "l"), ("input", lambda r: shape(r["in"]), "r"),
            ("output", lambda r: shape(r["out"]), "r"), ("note", lambda r: r.get("note", ""), "l")]
    parts = [table([{"module": "embed_tokens", "in": [b, t], "out": [b, t, d],
                     "note": "a row lookup per token id"}], cols)]
    for g in f["groups"]:
        rows = list(g["rows"])
        if g["scores"]:
            s = g["scores"]
            rows.append({"module": "scores = q·kᵀ, softmax, ·v", "in": s["shape"][:3] + [s["head_dim"]],
                         "out": s["shape"], "note": f"inside the attention, before o_proj: {s['heads']} "
                         f"heads × {commas(s['keys'])} keys per query (a fused kernel never "
                         "stores the scores)"})
        parts.append(f"{layers_label(g).capitalize()} ({g['count']}×), each:\n\n" + table(rows, cols))
    head = [{"module": "lm_head" + (" (tied: the embedding matrix)" if tied else ""),
             "in": [b, t, d], "out": [b, t, f["vocab"]], "note": "logits"}]
    parts.append("After the last layer, the final norm and:\n\n" + table(head, cols))
    note = (f"batch {b} × {commas(t)} tokens; shapes read off the weights of the model built on "
            "the meta device ([out, in] per Linear); the residual stream stays "
            f"[{b}, {commas(t)}, {commas(d)}] between modules.")
    return section("How a token flows", "\n\n".join(parts), note)


def rope_table(r: dict) -> str:
    cols = [("pair i", lambda q: str(q["index"]), "r"),
            ("frequency θ^(-2i/d)", lambda q: f"{q['base']:.3e}", "r"),
            ("wavelength (tokens)", lambda q: f"{q['wavelength']:,.0f}", "r"),
            ("band", lambda q: q["band"], "l"),
            ("scaled wavelength", lambda q: f"{q['scaled_wavelength']:,.0f}", "r")]
    b, c = r["bands"], r["counts"]
    lead = (f"{r['dim']} rotated dims of {r['head_dim']} ({r['dim'] // 2} pairs), θ = "
            f"{num(r['theta'])}, {layers_label(r)}.")
    if b and b["kind"] == "llama3":
        lead += (f" llama3 ×{num(b['factor'])} from {commas(b['original_context'])} tokens: "
                 f"wavelengths under {b['high_below']:,.0f} kept ({c['high']} pairs), over "
                 f"{b['low_above']:,.0f} slowed {num(b['factor'])}× ({c['low']}), between "
                 f"blended ({c['medium']}).")
    elif b and b["kind"] == "yarn":
        lead += (f" YaRN ×{num(b['factor'])} from {commas(b['original_context'])} tokens: pairs "
                 f"under {num(b['ramp'][0])} kept ({c['high']}), over {num(b['ramp'][1])} slowed "
                 f"({c['low']}), a ramp between ({c['medium']}).")
    elif b and b["kind"] == "longrope":
        lo, hi, long_lo, long_hi, attn = b["spans"]
        span = lambda a, z: f"{num(a)}×" if a == z else f"{num(a)}–{num(z)}×"  # noqa: E731
        lead += (f" LongRoPE from {commas(b['original_context'])} tokens: each pair slowed by "
                 f"its own factor, {span(lo, hi)} up to that length, {span(long_lo, long_hi)} "
                 f"past it (the table's), cos and sin ×{attn:.4f}.")
    elif b:
        lead += f" {b['kind']} scaling: every pair slowed {num(b['factor'])}×."
    return lead + "\n\n" + table(r["pairs"], cols)


def components(spec, arch: dict, dive: dict, explain: dict) -> str:
    parts = []
    for key, title in (("attention", "Attention"), ("mixers", "State mixer"), ("ffn", "FFN")):
        for c in arch[key]:
            where = "" if c["count"] == spec.n_layers else f" ({layers_label(c)})"
            parts.append(f"**{title}{where}.** {c['explain']}")
    parts.append(f"**Norm.** {wording.norm_explain(spec.norm, spec.d_model)}")
    parts.append(f"**Position.** {wording.position_explain(spec.position, spec)}")
    parts += [rope_table(r) for r in explain["rope"]]
    parts.append("**Embedding and head.** " + wording.tying_explain(
        spec, dive["params"]["token_embedding"]))
    return section("What each component does", "\n\n".join(parts),
                   "formulas with this model's numbers, from each component kind's entry "
                   "(archscope/kinds); frequencies from estimate/rope.py.")


def layer_flops(groups: list[dict]) -> str:
    comps = [c for c in groups[0]["at"][0]["by_component"]
             if any(a["by_component"].get(c) for g in groups for a in g["at"])]
    rows = [{"layers": g["layers"], "count": g["count"], **a} for g in groups for a in g["at"]]
    cols = [("layers", lambda r: layers_label(r), "l"), ("context", lambda r: commas(r["context"]), "r")]
    cols += [(c, lambda r, c=c: f"{r['by_component'].get(c, 0) / 1e6:,.1f}", "r") for c in comps]
    cols += [("layer total", lambda r: f"{sum(r['by_component'].values()) / 1e6:,.1f}", "r"),
             ("× layers (GFLOPs)", lambda r: f"{r['count'] * sum(r['by_component'].values()) / 1e9:,.2f}", "r")]
    note = ("MFLOPs of one decode step in ONE layer of each group (lm_head apart: see FLOPs per "
            "token); attention_proj: q/k/v/o projections; attention_qk and attention_av: the "
            "scores and their weighted sum, which grow with the keys read; mixer_state: the "
            "recurrence step, constant.") if comps else DASH
    return section("Per-layer decode FLOPs", table(rows, cols), note)
