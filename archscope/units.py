"""Numbers written for people: thousands separators, B/M/K suffixes, spec values as papers write
them. Pure string functions, shared by the component kinds' wording and every report surface."""

from __future__ import annotations

import re

DASH = "—"


def commas(n: int | float) -> str:
    return f"{n:,}" if isinstance(n, int) else f"{n:,.2f}"


def human(n: float) -> str:
    """1_235_814_400 -> '1.24B'; 576 -> '576'."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        # from 999.5 of the unit below up: three digits would round it to '1000M'
        if abs(n) >= div * 0.9995:
            return f"{n / div:.3g}{suffix}" if n / div < 100 else f"{n / div:.0f}{suffix}"
    return f"{n:g}"


def sci(x: float) -> str:
    """1e-05 -> '1e-5'; 1.5e-06 -> '1.5e-6' (the form configs and papers use)."""
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m[1] == "-" else "") + m[2], f"{x:g}")


def num(x: float | None) -> str:
    """A spec number as people write it: 500000.0 -> '500,000', 0.015625 -> '0.015625'."""
    if x is None:
        return DASH
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:g}"


def bias_text(flag: bool) -> str:
    """' + bias' after a module name when it has one."""
    return " + bias" if flag else ""


def text_table(rows: list[list[str]], right: set[int] = frozenset(), indent: str = "  ") -> list[str]:
    """Plain aligned columns. Used where importing pandas (about 1 s) would dominate the run."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [indent + "  ".join(cell.rjust(w) if c in right else cell.ljust(w)
                               for c, (cell, w) in enumerate(zip(row, widths))).rstrip()
            for row in rows]
