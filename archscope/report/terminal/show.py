"""`archscope show`: one model's spec, structure and parameter totals, as text."""

from __future__ import annotations

from archscope.report import wording as describe
from archscope.report.fmt import commas, gib, human, layer_ranges, mb, mib
from archscope.report.fmt import text_table as _table
from archscope.spec.schema import ModelSpec


def show_text(spec: ModelSpec, record, layer_modules: dict, details: dict,
              counted: int | None = None) -> str:
    """record: estimate.ModelRecord; layer_modules: estimate.structure.layer_module_rows(spec);
    details: report.costs.details_record(spec, record, lengths)."""
    params = record.params
    lines = [f"{spec.name}", f"  source: {spec.source}", ""]
    lines += ["Shape"] + _table([
        ["vocab_size", commas(spec.vocab_size)], ["d_model", commas(spec.d_model)],
        ["n_layers", str(spec.n_layers)], ["max_seq_len", commas(spec.max_seq_len)],
        ["norm", describe.norm(spec.norm)], ["position", describe.position(spec.position)],
        ["tie_embeddings", str(spec.tie_embeddings).lower()],
    ] + ([["multipliers", ", ".join(f"{k} {v:g}" for k, v in spec.mults.shown().items())]]
         if spec.multipliers else [])
      + ([["lm_head", describe.head(spec.lm_head)]] if spec.head else []))
    lines += ["", "Layers"]
    for group in describe.layer_plan(spec):
        lines.append(f"  {group['layers']} ({group['count']}x): {group['attention']}; {group['ffn']}")
        if group["note"]:
            lines.append(f"      note: {group['note']}")
    for indices, rows in layer_modules.items():
        lines += ["", f"Modules of layer {layer_ranges(indices)}"]
        lines += _table([[r["module"], r["type"], r["shapes"], commas(r["params"])] for r in rows],
                        right={3})
    lines += ["", "Parameters"]
    rows = [["total", commas(params.total), human(params.total)],
            ["active per token", commas(params.active), human(params.active)],
            ["embedding", commas(params.embedding), human(params.embedding)]]
    if params.mtp:  # shipped in the checkpoint, run by no model here: apart from the total
        rows.append([f"MTP modules ({spec.mtp_layers}, not in total)", commas(params.mtp),
                     human(params.mtp)])
    if counted is not None:
        verdict = "matches" if counted == params.total else f"DIFFERS by {counted - params.total:+,}"
        rows.append(["counted (meta)", commas(counted), verdict])
    lines += _table(rows, right={1})
    return "\n".join(lines + _detail_lines(details, record.conventions.batch)) + "\n"


def _detail_lines(d: dict, batch: int) -> list[str]:
    lines = ["", "Parameter breakdown"]
    lines += _table([[r["component"], commas(r["params"]), f"{r['percent']:.2f}%"]
                     for r in d["params_breakdown"]], right={1, 2})
    kv = d["kv_cache"]
    lines += ["", f"KV cache ({kv['dtype']}, batch {batch})"]
    for g in kv["groups"]:
        window = f", window {g['window']:,}" if g["window"] else ""
        lines.append(f"  layers {g['layers']} ({g['variant']}{window}): per token per layer "
                     f"{g['elements_per_token']:,} elements = {g['bytes_per_token']:,} bytes "
                     f"(MHA-equivalent {g['mha_elements_per_token']:,} elements)")
    lines.append(f"  per token, all layers, one sequence: {kv['bytes_per_token']:,} bytes")
    for g in d["state"]:  # a hybrid's state mixers: constant per sequence, not per token
        parts = ", ".join(f"{name} {b:,}" for name, b in g["bytes_by_part"].items())
        lines.append(f"  layers {g['layers']} ({g['kind']}): constant state per sequence per "
                     f"layer {g['bytes_per_layer']:,} bytes ({parts})")
    state = d["state"]  # the hybrid's columns: its constant state and what it holds in all
    rows = [["seq_len", "bytes", "MB", "MiB", "MHA-equivalent MiB"]
            + (["+ state bytes", "cache + state MiB"] if state else [])]
    rows += [[commas(r["seq_len"]), commas(r["bytes"]), mb(r["bytes"]), mib(r["bytes"]),
              mib(r["mha_bytes"])]
             + ([commas(r["state_bytes"]), mib(r["bytes"] + r["state_bytes"])] if state else [])
             for r in kv["at_lengths"]]
    lines += _table(rows, right=set(range(len(rows[0]))))
    first = d["decode_flops"][0]
    components = list(first["by_component"])
    lines += ["", "Decode FLOPs per token (2 per multiply-add, matmuls only; MLA "
                  f"{first['mla_convention']})"]
    rows = [["context", "total"] + components]
    rows += [[commas(r["context"]), human(r["total"])] + [human(r["by_component"][c])
                                                         for c in components]
             for r in d["decode_flops"]]
    lines += _table(rows, right=set(range(len(rows[0]))))
    lines += ["", "Weights"]
    lines += _table([[dtype, commas(b), f"{b / 1e9:,.2f} GB", f"{b / 2**30:,.2f} GiB"]
                     for dtype, b in d["weights_bytes"].items()], right={1, 2, 3})
    mem = d["inference_memory"]
    lines += ["", f"Inference memory (weights {mem[0]['weights_dtype']}, cache {kv['dtype']}, "
                  f"batch {mem[0]['batch']}): weights + KV cache "
                  + ("+ state " if state else "") + "+ activations"]
    rows = [["seq_len", "weights", "KV cache"] + (["state"] if state else [])
            + ["activations", "total"]]
    rows += [[commas(r["seq_len"]), gib(r["weights"]), gib(r["kv_cache"])]
             + ([gib(r["state"])] if state else []) + [gib(r["activations"]), gib(r["total"])]
             for r in mem]
    lines += _table(rows, right=set(range(len(rows[0]))))
    return lines
