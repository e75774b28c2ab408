"""`archscope compare --gpu NAME`: compare's rows with the fit columns beside them.

The fit of each row (estimate/fit.py at the row's seq_len, batch, weight dtype and cache dtype,
on one GPU of that name) is the `fit` object of the JSON row; the table, markdown and CSV add
its main figures as columns after compare's own (report/terminal/compare.py, unchanged).
"""

from __future__ import annotations

from archscope.report.fmt import text_table
from archscope.report.terminal import compare
from archscope.tables import csv_text, markdown_table

# (column title, fit key, formatter for people)
FIT_COLUMNS = (
    ("fits", "fits", lambda v: "yes" if v else "no"),
    ("weights/GPU (GB)", "weights_bytes_per_gpu", lambda b: f"{b / 1e9:,.2f}"),
    ("cache/seq (GB)", "cache_bytes_per_sequence", lambda b: f"{b / 1e9:,.3f}"),
    ("max context", "max_context", lambda n: f"{n:,}"),
    ("sequences", "max_concurrent_sequences", lambda n: f"{n:,}"),
    ("TTFT (ms)", "ttft_ms", lambda v: f"{v:,.1f}"),
    ("TPOT (ms)", "tpot_ms", lambda v: f"{v:,.2f}"),
    ("tok/s", "decode_tokens_per_s", lambda v: f"{v:,.0f}"),
)
CSV_KEYS = tuple(key for _, key, _ in FIT_COLUMNS)


def _people(records: list[dict]) -> list[dict]:
    rows = compare.people_rows(records)
    for row, r in zip(rows, records):
        row.update({title: fmt(r["fit"][key]) for title, key, fmt in FIT_COLUMNS})
    return rows


def _footnote(records: list[dict]) -> str:
    f = records[0]["fit"]
    return (compare.footnote(records) + f" Fit: one {f['gpu']}, {f['weight_format']} weights, "
            f"{f['gpu_memory_utilization']:g} of memory, cache paged in 16-token blocks; "
            f"sequences at seq_len; TTFT a prompt of seq_len, TPOT at the batch (roofline at "
            f"{f['fractions']['bandwidth']:g} of peak bandwidth, {f['fractions']['compute']:g} "
            f"of peak compute: `archscope fit` says more).")


def render(records: list[dict], fmt: str) -> str:
    """fmt: table | markdown | csv; every record carries its `fit` object."""
    if fmt == "table":
        rows = _people(records)
        cells = [list(rows[0])] + [list(row.values()) for row in rows]
        right = set(range(1, len(cells[0]))) - {4}
        return "\n".join(text_table(cells, right, indent="")) + "\n\n" + _footnote(records) + "\n"
    if fmt == "csv":
        return csv_text([{**{k: v for k, v in r.items() if k != "fit"},
                          **{f"fit_{k}": r["fit"][k] for k in ("gpu", *CSV_KEYS)}}
                         for r in records])
    return markdown_table(_people(records)) + "\n\n" + _footnote(records) + "\n"
