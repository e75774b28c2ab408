"""`archscope show`: one model's spec, structure and parameter totals, as text or markdown.

The same tables either way: markdown writes each heading as `###`, each table as a pipe table
(its first row the titles; the text view's key-value tables get `key | value`) and each note
as a list item. Sizes are in one byte family (archscope/units.py), named in the titles.
"""

from __future__ import annotations

import re
from contextvars import ContextVar

from archscope.report import wording as describe
from archscope.report.fmt import commas, human, layer_ranges, text_table
from archscope.spec.schema import ModelSpec
from archscope.tables import pipe_table
from archscope.units import byte_unit, in_unit, size, units_note

_markdown: ContextVar[bool] = ContextVar("show_markdown", default=False)


def _table(rows: list[list[str]], right=frozenset(), titles: list[str] | None = None) -> list[str]:
    """Text: aligned columns (no title row where `titles` is given: the rows say what they are);
    markdown: a pipe table under `titles` (or its first row)."""
    if not _markdown.get():
        return text_table(rows, right)
    return ["", pipe_table([titles, *rows] if titles else rows), ""]  # blank runs: one (_show)


def _heading(text: str) -> list[str]:
    return ["", f"### {text}", ""] if _markdown.get() else ["", text]


def _note(text: str) -> str:
    return f"- {text}" if _markdown.get() else f"  {text}"


def show_text(spec: ModelSpec, record, layer_modules: dict, details: dict,
              counted: int | None = None, markdown: bool = False) -> str:
    """record: estimate.ModelRecord; layer_modules: estimate.structure.layer_module_rows(spec);
    details: report.costs.details_record(spec, record, lengths)."""
    token = _markdown.set(markdown)
    try:
        return _show(spec, record, layer_modules, details, counted)
    finally:
        _markdown.reset(token)


def _show(spec, record, layer_modules, details, counted) -> str:
    params = record.params
    lines = ([f"## {spec.name}", "", f"source: {spec.source}"] if _markdown.get()
             else [f"{spec.name}", f"  source: {spec.source}"])
    lines += _heading("Shape") + _table([
        ["vocab_size", commas(spec.vocab_size)], ["d_model", commas(spec.d_model)],
        ["n_layers", str(spec.n_layers)], ["max_seq_len", commas(spec.max_seq_len)],
        ["norm", describe.norm(spec.norm)], ["position", describe.position(spec.position)],
        ["tie_embeddings", str(spec.tie_embeddings).lower()],
    ] + ([["multipliers", ", ".join(f"{k} {v:g}" for k, v in spec.mults.shown().items())]]
         if spec.multipliers else [])
      + ([["lm_head", describe.head(spec.lm_head)]] if spec.head else []),
      titles=["key", "value"])
    lines += _heading("Layers")
    for group in describe.layer_plan(spec):
        lines.append(_note(f"{group['layers']} ({group['count']}x): {group['attention']}; "
                           f"{group['ffn']}"))
        if group["note"]:
            lines.append(("  " if _markdown.get() else "    ") + _note(f"note: {group['note']}"))
    for indices, rows in layer_modules.items():
        lines += _heading(f"Modules of layer {layer_ranges(indices)}")
        lines += _table([[r["module"], r["type"], r["shapes"], commas(r["params"])] for r in rows],
                        right={3}, titles=["module", "type", "shapes", "params"])
    lines += _heading("Parameters")
    rows = [["total", commas(params.total), human(params.total)],
            ["active per token", commas(params.active), human(params.active)],
            ["embedding", commas(params.embedding), human(params.embedding)]]
    if spec.active_convention:  # as the model card counts them
        card = params.active_under(spec.active_convention)
        rows.insert(2, [f"active, the card's way ({spec.active_convention.replace('_', ' ')})",
                        commas(card), human(card)])
    if params.mtp:  # shipped in the checkpoint, run by no model here: apart from the total
        rows.append([f"MTP modules ({spec.mtp_layers}, not in total)", commas(params.mtp),
                     human(params.mtp)])
    if counted is not None:
        verdict = "matches" if counted == params.total else f"DIFFERS by {counted - params.total:+,}"
        rows.append(["counted (meta)", commas(counted), verdict])
    lines += _table(rows, right={1}, titles=["parameters", "count", "short"])
    lines += _detail_lines(details, record.conventions.batch)
    text = "\n".join(lines + ["", _note(units_note())]) + "\n"
    return re.sub(r"\n{3,}", "\n\n", text) if _markdown.get() else text


def _detail_lines(d: dict, batch: int) -> list[str]:
    lines = _heading("Parameter breakdown")
    lines += _table([[r["component"], commas(r["params"]), f"{r['percent']:.2f}%"]
                     for r in d["params_breakdown"]], right={1, 2},
                    titles=["component", "params", "share"])
    kv = d["kv_cache"]
    lines += _heading(f"KV cache ({kv['dtype']}, batch {batch})")
    for g in kv["groups"]:
        window = f", window {g['window']:,}" if g["window"] else ""
        lines.append(_note(f"layers {g['layers']} ({g['variant']}{window}): per token per layer "
                           f"{g['elements_per_token']:,} elements = {g['bytes_per_token']:,} "
                           f"bytes (MHA-equivalent {g['mha_elements_per_token']:,} elements)"))
    lines.append(_note(f"per token, all layers, one sequence: {kv['bytes_per_token']:,} bytes"))
    for g in d["state"]:  # a hybrid's state mixers: constant per sequence, not per token
        parts = ", ".join(f"{name} {b:,}" for name, b in g["bytes_by_part"].items())
        lines.append(_note(f"layers {g['layers']} ({g['kind']}): constant state per sequence "
                           f"per layer {g['bytes_per_layer']:,} bytes ({parts})"))
    state = d["state"]  # the hybrid's columns: its constant state and what it holds in all
    mega = byte_unit("M")
    rows = [["seq_len", "bytes", mega, f"MHA-equivalent {mega}"]
            + (["+ state bytes", f"cache + state {mega}"] if state else [])]
    rows += [[commas(r["seq_len"]), commas(r["bytes"]), in_unit(r["bytes"], "M"),
              in_unit(r["mha_bytes"], "M")]
             + ([commas(r["state_bytes"]), in_unit(r["bytes"] + r["state_bytes"], "M")]
                if state else [])
             for r in kv["at_lengths"]]
    lines += _table(rows, right=set(range(len(rows[0]))))
    first = d["decode_flops"][0]
    components = list(first["by_component"])
    lines += _heading("Decode FLOPs per token (2 per multiply-add, matmuls only; MLA "
                      f"{first['mla_convention']})")
    rows = [["context", "total"] + components]
    rows += [[commas(r["context"]), human(r["total"])] + [human(r["by_component"][c])
                                                         for c in components]
             for r in d["decode_flops"]]
    lines += _table(rows, right=set(range(len(rows[0]))))
    lines += _heading("Weights")
    lines += _table([[dtype, commas(b), size(b, "G")]
                     for dtype, b in d["weights_bytes"].items()], right={1, 2},
                    titles=["dtype", "bytes", "size"])
    mem = d["inference_memory"]
    lines += _heading(f"Inference memory (weights {mem[0]['weights_dtype']}, cache "
                      f"{kv['dtype']}, batch {mem[0]['batch']}): weights + KV cache "
                      + ("+ state " if state else "") + f"+ activations ({byte_unit('G')})")
    rows = [["seq_len", "weights", "KV cache"] + (["state"] if state else [])
            + ["activations", "total"]]
    rows += [[commas(r["seq_len"]), in_unit(r["weights"], "G"), in_unit(r["kv_cache"], "G")]
             + ([in_unit(r["state"], "G")] if state else [])
             + [in_unit(r["activations"], "G"), in_unit(r["total"], "G")]
             for r in mem]
    lines += _table(rows, right=set(range(len(rows[0]))))
    return lines
