"""`archscope sweep`: its rows -> a table for people, markdown, or CSV; the invalid combinations
with their reasons.

No pandas: a sweep may have thousands of rows and is asked for in scripts, and the csv module
and a plain table are enough (and start in no time).
"""

from __future__ import annotations

import csv
import io
import json

from archscope.estimate.sweep import Sweep
from archscope.report.fmt import text_table
from archscope.report.terminal.compare import COLUMNS

# compare's columns for people, less the model (every row is the same one) and the MiB twin
PEOPLE = [c for c in COLUMNS if c[0] not in ("model", "KV cache (MiB)")]


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


def render(s: Sweep, fmt: str) -> str:
    """fmt: table | markdown | csv (json is the CLI's, straight from the sweep)."""
    if fmt == "csv":
        return csv_text(s)
    keys = [a.key for a in s.axes]
    head = keys + [title for title, _, _ in PEOPLE]
    body = [[value_text(r[k]) for k in keys] + [f(r[key]) for _, key, f in PEOPLE]
            for r in s.rows]
    count = f"{s.model}: {len(s.rows):,} variants at seq_len {s.seq_len:,}"
    bad = invalid_lines(s)
    if fmt == "markdown":
        lines = [count, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        if bad:
            lines += ["", f"Invalid combinations ({len(bad)}):", ""] + [f"- {b}" for b in bad]
        return "\n".join(lines) + "\n"
    right = set(range(len(keys), len(head))) - {len(keys) + 3}  # the attention kind: left
    lines = [count, ""] + (text_table([head] + body, right, indent="") if body else [])
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
