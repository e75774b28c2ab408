"""`archscope compare`: summary records -> rows -> table, markdown or CSV text.

Tables go through archscope.tables (tabulate and csv), never pandas, whose import alone would
double the command's time and which the light install lacks.
"""

from __future__ import annotations

from archscope.report.fmt import human, mb, mib, text_table
from archscope.tables import csv_text, markdown_table

# (column title, record key, formatter for people)
COLUMNS = (
    ("model", "model", str),
    ("params", "params_total", human),
    ("active", "params_active", human),
    ("embedding", "params_embedding", human),
    ("attention", "attention", str),
    ("KV cache (MB)", "kv_cache_bytes", lambda b: mb(b).removesuffix(" MB")),
    ("KV cache (MiB)", "kv_cache_bytes", lambda b: mib(b).removesuffix(" MiB")),
    ("KV/token (KiB)", "kv_cache_bytes_per_token", lambda b: f"{b / 1024:,.1f}"),
    ("+ state (MB)", "state_bytes", lambda b: mb(b).removesuffix(" MB")),
    ("decode FLOPs/token", "flops_per_token", human),
    ("prefill FLOPs", "prefill_flops", human),
    ("weights (GB)", "weights_bytes", lambda b: f"{b / 1e9:,.2f}"),
)


def people_rows(records: list[dict]) -> list[dict]:
    """One row per model for people: B/M suffixes, MB and MiB; the state mixers' constant state
    only when some model has one (a hybrid)."""
    hybrid = any(r["state_bytes"] for r in records)
    columns = [c for c in COLUMNS if hybrid or c[1] != "state_bytes"]
    rows = []
    for r in records:
        row = {title: fmt(r[key]) for title, key, fmt in columns}
        if "params_counted" in r:
            row["counted (meta)"] = "matches" if r["params_counted"] == r["params_total"] \
                else f"{r['params_counted']:,}"
        if r["exceeds_context"]:
            row["model"] += " *"
        rows.append(row)
    return rows


def footnote(records: list[dict]) -> str:
    r = records[0]
    text = (f"seq_len {r['seq_len']:,}, batch {r['batch']}, {r['dtype']}. KV cache: batch x "
            f"seq_len tokens; decode FLOPs: one new token at that context; prefill: "
            f"{r['prefill_attention']} attention, whole prompt; 1 MB = 10^6 bytes, 1 MiB = 2^20.")
    if any(x["state_bytes"] for x in records):
        text += (" State: the constant conv and SSM / recurrent state of a hybrid's state-mixer "
                 "layers for the batch, whatever seq_len (KV cache + state = what it holds).")
    if any(x["exceeds_context"] for x in records):
        text += " * seq_len exceeds the model's context: computed as a what-if."
    return text


def render(records: list[dict], fmt: str) -> str:
    """fmt: table | markdown | csv (json is rendered by the CLI straight from the records)."""
    if fmt == "table":
        rows = people_rows(records)
        cells = [list(rows[0])] + [list(row.values()) for row in rows]
        right = set(range(1, len(cells[0]))) - {4}  # numbers right, names and kinds left
        return "\n".join(text_table(cells, right, indent="")) + "\n\n" + footnote(records) + "\n"
    if fmt == "csv":
        return csv_text(records)
    return markdown_table(people_rows(records)) + "\n\n" + footnote(records) + "\n"
