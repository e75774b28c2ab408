"""`archscope compare`: summary records -> columns -> table, markdown or CSV text.

The text view shows `DEFAULT`, the columns a reader wants first, and fits a 120-column
terminal; markdown and CSV hold every column. `--columns` (a list of `Column.name`s, or `all`)
picks the columns of all three; JSON is the CLI's, always whole. Sizes are in one byte family
(archscope/units.py), each column in one unit, named in its title.

Tables go through archscope.tables (tabulate and csv), never pandas, whose import alone would
double the command's time and which the light install lacks; tabulate is imported only when
asked for, as the CLI reads the column names from here for its help.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Callable, Sequence

from archscope.report.fmt import DASH, flops_text, human, text_table
from archscope.units import byte_unit, in_unit, unit_bytes, units_note

WIDTH = 100  # footnotes wrap here: the table's own lines stay within 120 columns


@dataclass(frozen=True)
class Column:
    name: str  # what --columns takes
    title: str  # the heading; a size column adds its unit: 'KV cache (GB)'
    key: str  # the record's key (CSV's header); 'fit.KEY' is KEY of the row's `fit` object
    fmt: Callable | None = None  # value -> cell; None: a byte size, in the column's unit
    left: bool = False  # names and kinds left, numbers right
    optional: bool = False  # in the default and `all` views only when some row has a value

    def value(self, record: dict):
        if self.key in record:  # a sweep's grid keys are dotted too
            return record[self.key]
        head, _, inner = self.key.partition(".")
        value = record.get(head)
        return value.get(inner) if inner and value is not None else value

    def cells(self, records: list[dict]) -> tuple[str, list[str]]:
        """(title, one cell per record)."""
        values = [self.value(r) for r in records]
        if self.fmt is not None:
            return self.title, [DASH if v is None else self.fmt(v) for v in values]
        # the largest unit in which every cell keeps two significant digits (>= 0.10)
        least = min((v for v in values if v), default=0)
        scale = next((s for s in "TGM" if least >= unit_bytes(s) / 10), "k")
        return (f"{self.title} ({byte_unit(scale)})",
                [DASH if v is None else in_unit(v, scale) for v in values])

    def csv_key(self) -> str:
        return self.key.replace(".", "_")


class Counted(Column):
    """--verify's count on the meta device: 'matches' where it is the analytic count."""

    def cells(self, records: list[dict]) -> tuple[str, list[str]]:
        return self.title, [DASH if r.get(self.key) is None else "matches"
                            if r[self.key] == r["params_total"] else f"{r[self.key]:,}"
                            for r in records]


COLUMNS = (
    Column("model", "model", "model", str, left=True),
    Column("params", "params", "params_total", human),
    Column("active", "active", "params_active", human),
    Column("embedding", "embedding", "params_embedding", human),
    Column("attention", "attention", "attention", str, left=True),
    Column("kv", "KV cache", "kv_cache_bytes"),
    Column("kv-per-token", "KV/token", "kv_cache_bytes_per_token"),
    Column("state", "state", "state_bytes", optional=True),
    Column("flops", "FLOPs/token", "flops_per_token", human),
    Column("prefill", "prefill FLOPs", "prefill_flops", flops_text),
    Column("weights", "weights", "weights_bytes"),
    Column("memory", "memory", "inference_memory_bytes"),
    Counted("counted", "counted (meta)", "params_counted", str, optional=True),
)
DEFAULT = ("model", "params", "active", "attention", "kv", "state", "flops", "weights",
           "counted")


def choose(columns: Sequence[Column], records: list[dict], names: Sequence[str] | None,
           default: Sequence[str]) -> list[Column]:
    """The columns to show: `names` as given (the model first, always), or `default` (None),
    or every column ('all' among them); an optional column only where some record has one."""
    if names is None or "all" in names:
        wanted = default if names is None else [c.name for c in columns]
        return [c for c in columns if c.name in wanted and not (
            c.optional and not any(c.value(r) for r in records))]
    by_name = {c.name: c for c in columns}
    return [by_name["model"]] + [by_name[n] for n in dict.fromkeys(names) if n != "model"]


def table_lines(columns: list[Column], records: list[dict]) -> list[str]:
    """The aligned table for people: a line of titles, a line per record."""
    head, cells = _cells(columns, records)
    right = {i for i, c in enumerate(columns) if not c.left}
    return text_table([head] + [list(row) for row in zip(*cells)], right, indent="")


def text_view(columns: list[Column], records: list[dict], note: str) -> str:
    """The aligned table, a blank line, the footnote wrapped."""
    return "\n".join(table_lines(columns, records)) + "\n\n" + textwrap.fill(note, WIDTH) + "\n"


def markdown_text(columns: list[Column], records: list[dict]) -> str:
    """A pipe table of the same cells as the text view."""
    from archscope.tables import markdown_table

    head, cells = _cells(columns, records)
    rows = [dict(zip(head, row)) for row in zip(*cells)]
    return markdown_table(rows, head, ["left" if c.left else "right" for c in columns])


def markdown_view(columns: list[Column], records: list[dict], note: str) -> str:
    return markdown_text(columns, records) + "\n\n" + note + "\n"


def csv_view(columns: list[Column] | None, rows: list[dict]) -> str:
    """The rows' own values (bytes, counts) under their keys: `columns`' keys, or every key."""
    from archscope.tables import csv_text

    return csv_text(rows, None if columns is None else [c.csv_key() for c in columns])


def _cells(columns: list[Column], records: list[dict]) -> tuple[list[str], list[list[str]]]:
    head, cells = zip(*(c.cells(records) for c in columns))
    cells = list(cells)
    if columns[0].name == "model":  # a seq_len past its context flags it (the footnote says)
        cells[0] = [cell + (" *" if r.get("exceeds_context") else "")
                    for cell, r in zip(cells[0], records)]
    return list(head), cells


def formats_text(records: list[dict]) -> str:
    """'bf16 weights', or where the rows differ (each model in its checkpoint's format) which
    models are in which: 'weights in each checkpoint's format: fp8-block for deepseek-v3; bf16
    for the rest'."""
    by_format: dict[str, list[str]] = {}
    for r in records:
        by_format.setdefault(r["dtype"], []).append(r["model"])
    if len(by_format) == 1:
        return f"{records[0]['dtype']} weights"
    most = max(by_format, key=lambda f: len(by_format[f]))
    named = "; ".join(f"{f} for {', '.join(models)}" for f, models in by_format.items()
                      if f != most)
    return f"weights in each checkpoint's format: {named}; {most} for the rest"


def footnote(records: list[dict]) -> str:
    r = records[0]
    text = (f"seq_len {r['seq_len']:,}, batch {r['batch']}, {formats_text(records)}, "
            f"{r['kv_dtype']} cache. KV cache: batch x seq_len tokens; FLOPs/token: decoding one "
            f"new token at that context; prefill: {r['prefill_attention']} attention, whole "
            f"prompt; {units_note()}.")
    if any(x["state_bytes"] for x in records):
        text += (" State: the constant conv and SSM / recurrent state of a hybrid's state-mixer "
                 "layers for the batch, whatever seq_len (KV cache + state = what it holds).")
    if any(x["exceeds_context"] for x in records):
        text += " A * marks a seq_len that exceeds the model's context: computed as a what-if."
    return text


def view(records: list[dict], fmt: str, names: Sequence[str] | None, columns: Sequence[Column],
         default: Sequence[str], note: str, csv_rows: list[dict]) -> str:
    """fmt: table | markdown | csv; names: --columns (None: the text view's `default`,
    markdown's and CSV's every column); csv_rows: the records as CSV writes them."""
    if fmt == "csv":
        everything = names is None or "all" in names
        return csv_view(None if everything else choose(columns, records, names, default),
                        csv_rows)
    if fmt == "table":
        return text_view(choose(columns, records, names, default), records, note)
    return markdown_view(choose(columns, records, names or ("all",), default), records, note)


def render(records: list[dict], fmt: str, names: Sequence[str] | None = None) -> str:
    """fmt: table | markdown | csv (json is rendered by the CLI straight from the records)."""
    return view(records, fmt, names, COLUMNS, DEFAULT, footnote(records), records)
