"""The explainers' tables that no other page holds, regenerated from document_records.py's
dicts (what-ifs, RoPE frequencies, per-layer FLOPs, 3B-vs-8B reductions). Pure rendering.

Each function returns (anchor title, markdown section); documents.py indexes them.
"""

from __future__ import annotations

from archscope.report.fmt import commas, human, mb, mib, num
from archscope.report.pages.markdown import DASH, section, table, yes_no

MODEL = ("model", lambda r: r.get("model") or r["name"], "l")


def gflops(n: int) -> str:
    return f"{n / 1e9:,.3f}"


def mflops(n: int) -> str:
    return f"{n / 1e6:,.1f}"


def saving(part: int, whole: int) -> str:
    return DASH if part == whole else f"{100 * (1 - part / whole):.0f}%"


def attention_variants(model: str, rows: list[dict]) -> tuple[str, str]:
    mha = rows[0]
    n = rows[0]["n_layers"]
    cols = [("", lambda r: r["variant"] + (" (as shipped)" if r["shipped"] else ""), "l"),
            ("KV heads", lambda r: str(r["kv_heads"]), "r")]
    cols += [(p, lambda r, p=p: commas(r["projections"][p]), "r")
             for p in ("q_proj", "k_proj", "v_proj", "o_proj")]
    cols += [("K+V params", lambda r: commas(r["projections"]["k_proj"] + r["projections"]["v_proj"]), "r"),
             ("cached per token per layer", lambda r: commas(r["kv_elements_per_token"]), "r"),
             ("cache per layer, 1,024 tokens", lambda r: mb(r["cache_per_layer_1024"]), "r"),
             (f"cache, {n} layers, 1,024 tokens", lambda r: f"{mb(r['cache_1024'])} ({mib(r['cache_1024'])})", "r"),
             ("saved vs MHA", lambda r: saving(r["cache_1024"], mha["cache_1024"]), "r")]
    title = f"{model}: MHA vs GQA vs MQA"
    note = ("the same model with attention.n_kv_heads set to n_heads (MHA) and to 1 (MQA) "
            "through the spec's validation; fp16 cache, batch 1; weights are [in × out] "
            "elements. K and V shrink with the KV heads, q_proj and o_proj do not.")
    return title, section(title, table(rows, cols), note)


def mla_cache(records: list[dict]) -> tuple[str, str]:
    rows = [{"model": r["name"], **a} for r in records for a in r["attention"]]
    cols = [MODEL, ("attention", lambda r: r["variant"], "l"),
            ("cached per token per layer", lambda r: f"{commas(r['kv_elements_per_token'])} "
             f"({r['cache_formula']})", "r"),
            ("MHA-equivalent (one K/V per query head)",
             lambda r: commas(r["mha_elements_per_token"]), "r"),
            ("ratio", lambda r: f"{r['mha_elements_per_token'] / r['kv_elements_per_token']:.1f}×", "r")]
    title = "Cache per token: MHA, GQA and MLA"
    note = ("elements per token per layer. MLA caches its latent plus the one RoPE key all "
            "heads share (kv_lora_rank + qk_rope_head_dim), not the latent alone.")
    return title, section(title, table(rows, cols), note)


def ffn_variants(model: str, rows: list[dict]) -> tuple[str, str]:
    base = rows[0]
    cols = [("FFN", lambda r: r["case"], "l"), ("activation", lambda r: r["activation"], "l"),
            ("matrices", lambda r: str(r["matrices"]), "r"),
            ("d_ff", lambda r: commas(r["d_ff"]), "r"),
            ("params per layer", lambda r: commas(r["params_per_layer"]), "r"),
            ("model params", lambda r: human(r["params_total"]), "r"),
            ("FFN decode GFLOPs per token", lambda r: gflops(r["decode_ffn_flops"]), "r"),
            ("vs SwiGLU", lambda r: f"{r['params_per_layer'] / base['params_per_layer']:.2f}×", "r")]
    title = f"{model}: SwiGLU vs a GELU MLP at equal width and at equal parameters"
    note = ("what-ifs of the preset (ffn.kind=mlp, activation gelu; equal parameters: d_ff × 3/2). "
            "Three matrices cost 1.5× two of the same width; at equal parameters the two-matrix "
            "MLP is 1.5× wider and costs the same FLOPs.")
    return title, section(title, table(rows, cols), note)


def rope(r: dict) -> tuple[str, str]:
    b = r["bands"]
    cols = [("pair i", lambda q: str(q["index"]), "r"),
            ("θ^(-2i/d)", lambda q: f"{q['base']:.4e}", "r"),
            ("wavelength (tokens)", lambda q: f"{q['wavelength']:,.1f}", "r"),
            ("band", lambda q: q["band"], "l"),
            ("scaled frequency", lambda q: f"{q['scaled']:.4e}", "r"),
            ("scaled wavelength", lambda q: f"{q['scaled_wavelength']:,.1f}", "r")]
    title = f"{r['model']}: RoPE frequencies (θ = {num(r['theta'])}, {r['dim']} rotated dims)"
    lines = []
    if b and b["kind"] == "llama3":
        count = {k: sum(q["band"] == k for q in r["pairs"]) for k in ("high", "medium", "low")}
        lines = [f"llama3 scaling ×{num(b['factor'])} from an original context of "
                 f"{commas(b['original_context'])}: wavelengths under {b['high_below']:,.0f} tokens "
                 f"are kept ({count['high']} pairs), over {b['low_above']:,.0f} divided by "
                 f"{num(b['factor'])} ({count['low']} pairs), between blended ({count['medium']} pairs)."]
    elif b and b["kind"] == "yarn":
        lines = [f"YaRN ×{num(b['factor'])} from {commas(b['original_context'])}: pairs below "
                 f"{num(b['ramp'][0])} kept, above {num(b['ramp'][1])} divided by "
                 f"{num(b['factor'])}, a linear ramp between."]
    elif b and b["kind"] == "longrope":
        lo, hi, long_lo, long_hi, attn = b["spans"]
        span = lambda a, z: num(a) if a == z else f"{num(a)}–{num(z)}"  # noqa: E731
        lines = [f"LongRoPE ×{num(b['factor'])} from {commas(b['original_context'])}: each pair "
                 f"divided by its own factor, {span(lo, hi)} up to that length and "
                 f"{span(long_lo, long_hi)} past it (the scaled column), cos and sin "
                 f"×{attn:.4f}."]
    body = "\n".join(lines) + "\n\n" + table(r["pairs"], cols)
    note = ("pair i turns θ^(-2i/d) radians per token; wavelength = 2π / frequency "
            "(estimate/rope.py, checked against the rotation nn/rope.py applies).")
    return title, section(title, body, note)


def layer_flops(rows: list[dict]) -> tuple[str, str]:
    flat = [{"model": r["model"], "n_layers": r["n_layers"], **a} for r in rows for a in r["at"]]
    cols = [MODEL, ("context", lambda r: commas(r["context"]), "r"),
            ("attention projections", lambda r: mflops(r["attention_proj"]), "r"),
            ("attention scores (QKᵀ, AV)", lambda r: mflops(r["attention_scores"]), "r"),
            ("FFN", lambda r: mflops(r["ffn"]), "r"),
            ("one layer", lambda r: mflops(r["layer"]), "r"),
            ("all layers (GFLOPs)", lambda r: gflops(r["without_head"]), "r"),
            ("lm_head (GFLOPs)", lambda r: gflops(r["lm_head"]), "r"),
            ("with head (GFLOPs)", lambda r: gflops(r["total"]), "r")]
    title = "Decode FLOPs per token: per layer, with and without the head"
    note = ("MFLOPs per layer unless marked; one new token reading `context` keys, 2 FLOPs per "
            "multiply-add, matmuls only (estimate/flops.py decode_flops_by_layer). The scores "
            "grow with the context, the projections and the FFN do not.")
    return title, section(title, table(flat, cols), note)


def reductions(rows: list[dict]) -> tuple[str, str]:
    small, big = rows
    keys = [("d_model", "d_model"), ("layers", "n_layers"), ("vocabulary", "vocab"),
            ("MLP hidden", "d_ff"), ("query heads", "q_heads"), ("KV heads", "kv_heads"),
            ("head dim", "head_dim"), ("GQA group", "group"), ("parameters", "params"),
            ("KV cache bytes per token (fp16)", "kv_bytes_per_token")]
    data = [{"aspect": label, "a": small[k], "b": big[k]} for label, k in keys]
    data.insert(4, {"aspect": "MLP expansion", "a": small["expansion"], "b": big["expansion"]})
    cell = lambda v: f"{v:.2f}×" if isinstance(v, float) else commas(v)  # noqa: E731
    cols = [("", lambda r: r["aspect"], "l"), (small["model"], lambda r: cell(r["a"]), "r"),
            (big["model"], lambda r: cell(r["b"]), "r"),
            ("reduction", lambda r: f"{100 * (1 - r['a'] / r['b']):.1f}%", "r")]
    title = f"{small['model']} vs {big['model']}: specifications and reductions"
    note = "reduction = 1 − small / large; parameters are unique tensors (a tied head counts once)."
    return title, section(title, table(data, cols), note)


def breakdown(r: dict) -> tuple[str, str]:
    total = sum(r["groups"].values())
    cols = [("component", lambda g: g[0], "l"), ("params", lambda g: commas(g[1]), "r"),
            ("share", lambda g: f"{100 * g[1] / total:.1f}%", "r")]
    title = f"{r['model']}: parameters by component"
    return title, section(title, table(list(r["groups"].items()) + [("total", total)], cols),
                          "the lm_head row is 0 when it is tied to the embedding (counted once).")


def by_model(title: str, rows: list[dict], cols, note: str) -> tuple[str, str]:
    return title, section(title, table(rows, cols), note)


def kv_cache(rows: list[dict]) -> tuple[str, str]:
    cols = [MODEL, ("attention", lambda r: r["variant"], "l"),
            ("KV heads", lambda r: str(r["kv_heads"]), "r"),
            ("head dim", lambda r: str(r["head_dim"]), "r"),
            ("layers", lambda r: str(r["n_layers"]), "r"),
            ("cached per token per layer", lambda r: commas(r["elements_per_token"]), "r"),
            ("window", lambda r: commas(r["window"]) if r["window"] else DASH, "r"),
            ("bytes", lambda r: commas(r["bytes_4096"]), "r"),
            ("MB", lambda r: mb(r["bytes_4096"]).removesuffix(" MB"), "r"),
            ("MiB", lambda r: mib(r["bytes_4096"]).removesuffix(" MiB"), "r")]
    note = ("2 × layers × KV heads × head dim × tokens × 2 bytes for GQA/MHA; MLA's latent + RoPE "
            "key; a window holds at most `window` tokens (at 4,096 tokens Mistral's 4,096 window "
            "caps nothing).")
    return by_model("KV cache at 4,096 tokens (fp16, batch 1)", rows, cols, note)


def tying(records: list[dict]) -> tuple[str, str]:
    cols = [MODEL, ("vocab", lambda r: commas(r["vocab_size"]), "r"),
            ("dim", lambda r: commas(r["d_model"]), "r"),
            ("embedding params", lambda r: commas(r["params"]["token_embedding"]), "r"),
            ("tied", lambda r: yes_no(r["tie_embeddings"]), "l"),
            ("saved by tying", lambda r: commas(r["params"]["saved_by_tying"]) if r["tie_embeddings"] else DASH, "r")]
    return by_model("Embedding and weight tying", records, cols,
                    "embedding = vocab × dim; a tied lm_head reuses that matrix, saving its size.")
