"""Rows of cells -> a GitHub pipe table or CSV text, for every surface that prints a table.

Plain tabulate and the csv module, not pandas: the light install has neither pandas nor numpy,
and the commands that print tables run there (pandas' to_markdown is this same tabulate call).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Sequence

from tabulate import tabulate


def _titles(rows: Sequence[dict], titles: Sequence[str] | None) -> list[str]:
    """The given titles, or every key of the rows in the order first met."""
    return list(titles) if titles is not None else list(dict.fromkeys(k for r in rows for k in r))


def markdown_table(rows: Sequence[dict], titles: Sequence[str] | None = None,
                   colalign: Sequence[str] | None = None) -> str:
    """A pipe table of the rows' cells as they are (no number is reparsed or reformatted); a
    key a row lacks is an empty cell."""
    titles = _titles(rows, titles)
    cells = [["" if r.get(t) is None else r.get(t) for t in titles] for r in rows]
    return tabulate(cells, headers=titles, tablefmt="pipe", disable_numparse=True,
                    colalign=colalign)


def csv_text(rows: Sequence[dict], titles: Sequence[str] | None = None) -> str:
    """CSV with a header row; None is an empty cell, anything else its str()."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    titles = _titles(rows, titles)
    writer.writerow(titles)
    writer.writerows(["" if r.get(t) is None else r.get(t) for t in titles] for r in rows)
    return out.getvalue()


def flat(record: dict, prefix: str = "") -> dict:
    """A JSON record as one CSV row: nested objects become dotted keys (`prefill.ms`), lists
    their JSON text; numbers stay as JSON has them (bytes, counts, ms)."""
    row = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            row.update(flat(value, name + "."))
        else:
            row[name] = json.dumps(value) if isinstance(value, (list, tuple)) else value
    return row


def records_csv(records: Sequence[dict]) -> str:
    """`--format csv` of every command: the rows of its `--format json`, flattened (flat)."""
    return csv_text([flat(r) for r in records])


def pipe_table(cells: Sequence[Sequence[str]]) -> str:
    """A GitHub pipe table of a text table's cells (the first row its titles), as they are."""
    return tabulate([list(r) for r in cells[1:]], headers=list(cells[0]), tablefmt="pipe",
                    disable_numparse=True)
