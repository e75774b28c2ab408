"""`archscope sweep`: its rows -> a table for people, markdown, or CSV; the invalid combinations
with their reasons.

The columns are compare's (report/terminal/compare.py) after the grid's: the text view shows
compare's default ones, markdown every one; CSV the rows' own values. No pandas: a sweep may
have thousands of rows and is asked for in scripts, and the csv module and a plain table are
enough (and start in no time).
"""

from __future__ import annotations

import csv
import io
import json

from archscope.estimate.sweep import Sweep
from archscope.report.terminal.compare import (COLUMNS, DEFAULT, Column, choose, markdown_text,
                                               table_lines)
from archscope.units import units_note


def value_text(value) -> str:
    """A grid value as `--set` would take it back: YAML's spelling of null and booleans."""
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


def invalid_lines(s: Sweep) -> list[str]:
    """One line per refused combination: 'k=v, k=v: key: reason'."""
    out = []
    for bad in s.invalid:
        values = ", ".join(f"{k}={value_text(v)}" for k, v in bad["values"].items())
        where = f"{bad['key']}: " if bad["key"] else ""
        out.append(f"{values}: {where}{bad['reason']}")
    return out


def columns(s: Sweep, view: str) -> list[Column]:
    """The grid's keys, then compare's columns less the model (every row is the same one):
    its default ones (view 'default') or all."""
    grid = [Column(a.key, a.key, a.key, value_text) for a in s.axes]
    shown = choose(COLUMNS, s.rows, None if view == "default" else ("all",), DEFAULT)
    return grid + [c for c in shown if c.name != "model"]


def render(s: Sweep, fmt: str) -> str:
    """fmt: table | markdown | csv (json is the CLI's, straight from the sweep)."""
    if fmt == "csv":
        return csv_text(s)
    count = f"{s.model}: {len(s.rows):,} variants at seq_len {s.seq_len:,} ({units_note()})"
    bad = invalid_lines(s)
    if fmt == "markdown":
        lines = [count] + (["", markdown_text(columns(s, "all"), s.rows)] if s.rows else [])
        if bad:
            lines += ["", f"Invalid combinations ({len(bad)}):", ""] + [f"- {b}" for b in bad]
        return "\n".join(lines) + "\n"
    lines = [count, ""] + (table_lines(columns(s, "default"), s.rows) if s.rows else [])
    if bad:
        lines += ["", f"invalid combinations ({len(bad)}):"] + [f"  {b}" for b in bad]
    return "\n".join(lines) + "\n"


def csv_text(s: Sweep) -> str:
    """The valid rows: grid keys first, then the record's keys (compare's JSON element)."""
    if not s.rows:
        return ""
    keys = [a.key for a in s.axes]
    columns = keys + [k for k in s.rows[0] if k not in keys]
    out = io.StringIO()
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(s.rows)
    return out.getvalue()
