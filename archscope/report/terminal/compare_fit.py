"""`archscope compare --gpu NAME`: compare's rows with the fit columns beside them.

The fit of each row (estimate/fit.py at the row's seq_len, batch, weight dtype and cache dtype,
on one GPU of that name) is the `fit` object of the JSON row; the table, markdown and CSV add
its main figures as columns after compare's own (report/terminal/compare.py). The text view's
default is what a reader asks of a GPU first: does it fit, how much room is left, how fast
(the parameters are in compare's own view, and in the weights).
"""

from __future__ import annotations

from typing import Sequence

from archscope.report.fmt import yes_no
from archscope.report.terminal import compare
from archscope.report.terminal.compare import Column

FIT_COLUMNS = (
    Column("fits", "fits", "fit.fits", yes_no, left=True),
    Column("gpu-weights", "weights/GPU", "fit.weights_bytes_per_gpu"),
    Column("seq-cache", "cache/seq", "fit.cache_bytes_per_sequence"),
    Column("max-context", "max context", "fit.max_context", lambda n: f"{n:,}"),
    Column("sequences", "sequences", "fit.max_concurrent_sequences", lambda n: f"{n:,}"),
    Column("ttft", "TTFT (ms)", "fit.ttft_ms", lambda v: f"{v:,.1f}"),
    Column("tpot", "TPOT (ms)", "fit.tpot_ms", lambda v: f"{v:,.2f}"),
    Column("tok-s", "tok/s", "fit.decode_tokens_per_s", lambda v: f"{v:,.0f}"),
)
COLUMNS = compare.COLUMNS + FIT_COLUMNS
DEFAULT = ("model", "fits", "gpu-weights", "seq-cache", "max-context", "sequences",
           "ttft", "tpot", "tok-s")


def _footnote(records: list[dict]) -> str:
    f = records[0]["fit"]
    return (compare.footnote(records) + f" Fit: one {f['gpu']}, those weights, "
            f"{f['gpu_memory_utilization']:g} of memory, cache paged in 16-token blocks; "
            f"sequences at seq_len; TTFT a prompt of seq_len, TPOT at the batch (roofline at "
            f"{f['fractions']['bandwidth']:g} of peak bandwidth, {f['fractions']['compute']:g} "
            f"of peak compute: `archscope fit` says more).")


def _csv_rows(records: list[dict]) -> list[dict]:
    """compare's keys, then the GPU and the fit columns' keys as fit_KEY."""
    keys = ["gpu"] + [c.key.removeprefix("fit.") for c in FIT_COLUMNS]
    return [{**{k: v for k, v in r.items() if k != "fit"},
             **{f"fit_{k}": r["fit"][k] for k in keys}} for r in records]


def render(records: list[dict], fmt: str, names: Sequence[str] | None = None) -> str:
    """As compare.render; every record carries its `fit` object."""
    return compare.view(records, fmt, names, COLUMNS, DEFAULT, _footnote(records),
                        _csv_rows(records))
