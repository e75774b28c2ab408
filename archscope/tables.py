"""Rows of cells -> a GitHub pipe table or CSV text, for every surface that prints a table.

Plain tabulate and the csv module, not pandas: the light install has neither pandas nor numpy,
and the commands that print tables run there (pandas' to_markdown is this same tabulate call).
"""

from __future__ import annotations

import csv
import io
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
