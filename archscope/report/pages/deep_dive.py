"""reports/models/<name>.md: one model's configuration, structure, parameters, cache, FLOPs,
memory and block diagrams, from its records (records.py, dive_records.py) and its spec."""

from __future__ import annotations

from archscope.report.diagrams import mermaid
from archscope.report import wording as describe
from archscope.report.fmt import commas, gib, human, mb, mib
from archscope.report.pages.markdown import (GENERATED, flops_text, image, layers_label, page, section,
                                       table, yes_no)
from archscope.report.pages import deep_dive_explain as explain
from archscope.report.records import distinct
from archscope.spec.schema import ModelSpec


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.2f}%"


def configuration(spec: ModelSpec) -> str:
    rows = [("vocab_size", commas(spec.vocab_size)), ("d_model", commas(spec.d_model)),
            ("n_layers", str(spec.n_layers)), ("max_seq_len", commas(spec.max_seq_len))]
    for part, text in (("attention", describe.attention),
                       ("mixer", describe.state_mixer),
                       ("ffn", lambda f: describe.ffn(f, spec.d_model))):
        groups = distinct(spec, "state" if part == "mixer" else part)
        every = len(groups) == 1 and len(groups[0][1]) == spec.n_layers
        rows += [(part if every else f"{part} ({layers_label(idx)})", text(component))
                 for component, idx in groups]
    rows += [("norm", describe.norm(spec.norm)), ("position", describe.position(spec.position)),
             ("tie_embeddings", yes_no(spec.tie_embeddings))]
    if spec.multipliers:
        rows.append(("multipliers", ", ".join(f"{k} {v:g}"
                                              for k, v in spec.mults.shown().items())))
    body = table([{"k": k, "v": v} for k, v in rows],
                 [("key", lambda r: r["k"], "l"), ("value", lambda r: r["v"], "l")])
    return section("Configuration", body, f"source: {spec.source}")


def structure(spec: ModelSpec, dive: dict) -> str:
    cols = [("layers", lambda g: g["layers"], "l"), ("count", lambda g: str(g["count"]), "r"),
            ("mixer" if spec.hybrid else "attention", lambda g: g["attention"], "l"),
            ("FFN", lambda g: g["ffn"], "l"),
            ("notes", lambda g: "; ".join(g["notes"]), "l")]
    parts = [table(dive["structure"], cols), "### Model\n\n" + fenced(mermaid.model_diagram(
        spec, dive["structure"]))]
    for group in dive["structure"]:
        parts.append(f"### Decoder layer: {layers_label(group)} ({group['count']}×)\n\n"
                     + fenced(mermaid.block_diagram(spec, spec.plan[group["first"]])))
    note = ("diagrams generated from the spec: norms where norm.position puts them, the attention "
            "and FFN drawn by their kind, residual adds, and a dotted edge when lm_head is tied.")
    return section("Layers and block diagram", "\n\n".join(parts), note)


def fenced(source: str) -> str:
    return f"```mermaid\n{source.rstrip()}\n```"


def modules(dive: dict) -> str:
    total = dive["params"]["total"]
    parts = []
    for group in dive["modules"]:
        n = group["count"]
        cols = [("module", lambda r: f"`{r['module']}`", "l"), ("type", lambda r: r["type"], "l"),
                ("weight shapes", lambda r: r["shapes"], "l"),
                ("params per layer", lambda r: commas(r["params"]), "r"),
                (f"× {n} layers", lambda r: commas(r["params"] * n), "r"),
                ("share of model", lambda r: pct(r["params"] * n, total), "r")]
        title = f"### {layers_label(group).capitalize()} ({n}×)"
        parts.append(f"{title}\n\n" + table(group["rows"], cols))
    note = ("modules of the layer built on the meta device (archscope's builder, HF module "
            "names); shapes are [out, in] for Linear weights; routed experts are stored stacked.")
    return section("Per-layer structure", "\n\n".join(parts), note)


def parameters(dive: dict) -> str:
    p = dive["params"]
    cols = [("component", lambda r: r[0], "l"), ("params", lambda r: commas(r[1]), "r"),
            ("human", lambda r: human(r[1]), "r"), ("share", lambda r: pct(r[1], p["total"]), "r")]
    rows = [(k, v) for k, v in p["breakdown"].items() if v]
    if p["tied_lm_head"]:  # shares the embedding matrix: counted once, under embedding
        rows.append(("lm_head (tied to the embedding)", 0))
    by_key = table(rows, cols)
    totals = [("total", p["total"]), ("active per token", p["active"]),
              ("embedding (lookup tables)", p["embedding"])]
    groups = table(list(p["groups"].items()) + totals, cols)
    if p["mtp"]:  # shipped in the checkpoint, run by no model here: beside the total, not in it
        groups += (f"\n\nThe checkpoint also ships {p['mtp_layers']} multi-token-prediction "
                   f"module(s): {commas(p['mtp'])} parameters ({human(p['mtp'])}), not in the "
                   "total above (no model here runs them; the loader skips their tensors).")
    return section("Parameter breakdown", by_key + "\n\n" + groups, dive["conventions"]["params"])


def kv_cache(arch: dict, dive: dict) -> str:
    kv = dive["kv_cache"]
    mla = any(a["compressed_cache"] for a in arch["attention"])
    lines = [f"- {layers_label(a)}: {commas(a['kv_elements_per_token'])} elements per token per "
             f"layer (MHA-equivalent {commas(a['mha_elements_per_token'])})"
             for a in arch["attention"]]
    lines.append(f"- one more token, all layers: {commas(kv['bytes_per_token'])} bytes")
    lines += [f"- {layers_label(g)} ({g['kind']}): no per-token cache; a constant state of "
              f"{commas(g['bytes_per_layer'])} bytes per sequence per layer ("
              + ", ".join(f"{k} {commas(b)}" for k, b in g["bytes_by_part"].items()) + ")"
              for g in dive["state"]]
    cols = [("seq_len", lambda r: commas(r["seq_len"]), "r"),
            ("bytes", lambda r: commas(r["bytes"]), "r"),
            ("MB", lambda r: mb(r["bytes"]).removesuffix(" MB"), "r"),
            ("MiB", lambda r: mib(r["bytes"]).removesuffix(" MiB"), "r")]
    if mla:
        cols.append(("decompressed MiB (naive MLA)",
                     lambda r: mib(r["decompressed_bytes"]).removesuffix(" MiB"), "r"))
    cols.append(("MHA-equivalent MiB", lambda r: mib(r["mha_bytes"]).removesuffix(" MiB"), "r"))
    if dive["state"]:
        cols += [("+ state bytes", lambda r: commas(r["state_bytes"]), "r"),
                 ("cache + state MiB", lambda r: mib(r["bytes"] + r["state_bytes"])
                  .removesuffix(" MiB"), "r")]
    body = "\n".join(lines) + "\n\n" + table(kv["at_lengths"], cols) + "\n\n" + \
        cache_sum_text(dive["cache_sum"])
    note = dive["conventions"]["kv_cache"]
    if dive["state"]:
        note += "; " + dive["conventions"]["state"]
    title = "KV cache and state" if dive["state"] else "KV cache"
    return section(f"{title} ({kv['dtype']}, batch 1)", body, note)


def cache_sum_text(s: dict) -> str:
    """The comparison's three cache columns at one context, each as the sum it is."""
    n = commas(s["seq_len"])
    where = (f"beyond this model's {commas(s['max_seq_len'])}-token context, so `compare` marks "
             "the row exceeds_context" if s["exceeds_context"] else
             f"within this model's {commas(s['max_seq_len'])}-token context")
    kv = [f"{layers_label(g)}: {commas(g['count'])} layer{'s' if g['count'] > 1 else ''} × "
          f"{commas(g['tokens_held'])} tokens held × "
          f"{commas(g['bytes_per_token'])} bytes per token = {commas(g['bytes'])}"
          for g in s["kv_groups"]]
    state = [f"{layers_label(g)} ({g['kind']}): {commas(g['count'])} layer"
             f"{'s' if g['count'] > 1 else ''} × {commas(g['bytes_per_layer'])} bytes ("
             + " + ".join(f"{k} {commas(b)}" for k, b in g["bytes_by_part"].items())
             + f") = {commas(g['count'] * g['bytes_per_layer'])}" for g in s["state_groups"]]
    lines = [f"**At {n} tokens** (`archscope compare --seq-len {s['seq_len']}`, {where}; "
             f"{s['kv_dtype']}, one sequence):", "",
             f"- kv_cache_bytes = {commas(s['kv_cache_bytes'])}"
             + ("" if kv else " (no layer caches per token)")]
    lines += [f"  - {t}" for t in kv]
    lines.append(f"- state_bytes = {commas(s['state_bytes'])}"
                 + ("" if state else " (no layer holds a constant state)"))
    lines += [f"  - {t}" for t in state]
    lines.append(f"- cache_bytes = kv_cache_bytes + state_bytes = {commas(s['cache_bytes'])}")
    return "\n".join(lines)


def flops(dive: dict) -> str:
    rows = [{**r, "prefill": p["total"]}
            for r, p in zip(dive["decode_flops"], dive["prefill_flops"])]
    comps = [c for c in rows[0]["by_component"] if any(r["by_component"][c] for r in rows)]
    cols = [("context", lambda r: commas(r["context"]), "r"),
            ("decode total", lambda r: flops_text(r["total"]), "r")]
    cols += [(c, lambda r, c=c: flops_text(r["by_component"][c]), "r") for c in comps]
    cols.append(("prefill (whole prompt)", lambda r: flops_text(r["prefill"]), "r"))
    body = table(rows, cols)
    if "mla_conventions" in rows[0]:
        mla_cols = [("context", lambda r: commas(r["context"]), "r")]
        mla_cols += [(c, lambda r, c=c: flops_text(r["mla_conventions"][c]), "r")
                     for c in rows[0]["mla_conventions"]]
        body += ("\n\nDecode FLOPs per token under each MLA convention (absorbed, the default: "
                 "kv_b_proj folded into the query and output, attention on the latent; recompute: "
                 "kv_b_proj re-applied to every cached latent; naive: decompressed K/V kept):\n\n"
                 + table(rows, mla_cols))
    return section("FLOPs per token", body, dive["conventions"]["flops"])


def memory(dive: dict) -> str:
    weights = table(list(dive["weights_bytes"].items()), [
        ("format", lambda r: r[0], "l"), ("weights (bytes)", lambda r: commas(r[1]), "r"),
        ("GB", lambda r: f"{r[1] / 1e9:,.2f}", "r"),
        ("GiB", lambda r: gib(r[1]).removesuffix(" GiB"), "r")])
    cols = [("seq_len", lambda r: commas(r["seq_len"]), "r")]
    cols += [(f"{title} (GiB)", lambda r, k=k: gib(r[k]).removesuffix(" GiB"), "r")
             for k, title in (("weights", "weights"), ("kv_cache", "KV cache"),
                              *((("state", "state"),) if dive["state"] else ()),
                              ("activations", "activations"), ("total", "total"))]
    inference = table(dive["inference_memory"], cols)
    dtype = dive["kv_cache"]["dtype"]
    note = ("weights: every stored tensor priced in the format (estimate/formats.py: scales and "
            "zero points included, embeddings, lm_head, norms and router kept in 16 bits by the "
            f"quantized formats). Inference, {dtype}, batch 1: weights + KV cache "
            + ("+ the state mixers' constant state " if dive["state"] else "") + "+ the transient "
            "activations of the prefill (attention scores left out, as a fused kernel never "
            "stores them).")
    body = weights + f"\n\nInference memory ({dtype}, batch 1):\n\n" + inference
    return section("Memory", body, note)


def figures(name: str, path: str) -> str:
    return section("Figures", image(f"{name} among its peers", f"../{path}"),
                   "the model bold among its family and the presets nearest its size, with every "
                   "preset in [the comparison's figures](../comparison.md#figures).")


def deep_dive_page(spec: ModelSpec, arch: dict, dive: dict, figure_path: str) -> str:
    """figure_path: the model's own figure (figures_model.path) under the report folder."""
    head = (f"# {spec.name}\n\n{GENERATED}\n\nEvery number on this page is computed from "
            f"[model_specs/{spec.name}.yaml](../../model_specs/{spec.name}.yaml); "
            f"see also [the comparison of all presets](../comparison.md).\n")
    return page(head, configuration(spec), explain.flow(dive["explain"]["flow"], spec.tie_embeddings),
                explain.components(spec, arch, dive, dive["explain"]), structure(spec, dive),
                modules(dive), explain.layer_flops(dive["explain"]["layer_flops"]),
                parameters(dive), kv_cache(arch, dive), flops(dive), memory(dive),
                figures(spec.name, figure_path))
