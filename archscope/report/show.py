"""`archscope show`: one model's spec, structure and parameter totals, as text."""

from __future__ import annotations

from archscope.report import describe
from archscope.report.fmt import commas, human, layer_ranges
from archscope.spec.schema import ModelSpec


def _table(rows: list[list[str]], right: set[int] = frozenset()) -> list[str]:
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  " + "  ".join(cell.rjust(w) if c in right else cell.ljust(w)
                             for c, (cell, w) in enumerate(zip(row, widths))).rstrip()
            for row in rows]


def show_text(spec: ModelSpec, params, layer_modules: dict, counted: int | None = None) -> str:
    """params: estimate.ParamCount; layer_modules: measure.counted.layer_module_rows(spec)."""
    lines = [f"{spec.name}", f"  source: {spec.source}", ""]
    lines += ["Shape"] + _table([
        ["vocab_size", commas(spec.vocab_size)], ["d_model", commas(spec.d_model)],
        ["n_layers", str(spec.n_layers)], ["max_seq_len", commas(spec.max_seq_len)],
        ["norm", describe.norm(spec.norm)], ["position", describe.position(spec.position)],
        ["tie_embeddings", str(spec.tie_embeddings).lower()],
    ] + ([["multipliers", ", ".join(f"{k} {v:g}" for k, v in vars(spec.mults).items()
                                    if v is not None)]] if spec.multipliers else []))
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
    if counted is not None:
        verdict = "matches" if counted == params.total else f"DIFFERS by {counted - params.total:+,}"
        rows.append(["counted (meta)", commas(counted), verdict])
    lines += _table(rows, right={1})
    return "\n".join(lines) + "\n"
