"""Number formatting for people: thousands separators, B/M/K suffixes, MB (10^6) and MiB (2^20)."""

from __future__ import annotations


def commas(n: int | float) -> str:
    return f"{n:,}" if isinstance(n, int) else f"{n:,.2f}"


def human(n: float) -> str:
    """1_235_814_400 -> '1.24B'; 576 -> '576'."""
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}" if n / div < 100 else f"{n / div:.0f}{suffix}"
    return f"{n:g}"


def mb(nbytes: int) -> str:
    return f"{nbytes / 1e6:,.2f} MB"


def mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.2f} MiB"


def gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.2f} GiB"


def layer_ranges(indices) -> str:
    """[0, 1, 2, 5, 7, 9] -> '0-2, 5, 7, 9'."""
    indices = sorted(indices)
    out, start = [], None
    for k, i in enumerate(indices):
        if start is None:
            start = i
        last = k + 1 == len(indices) or indices[k + 1] != i + 1
        if last:
            out.append(str(start) if start == i else f"{start}-{i}")
            start = None
    return ", ".join(out)


def text_table(rows: list[list[str]], right: set[int] = frozenset(), indent: str = "  ") -> list[str]:
    """Plain aligned columns. Used where importing pandas (about 1 s) would dominate the run."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return [indent + "  ".join(cell.rjust(w) if c in right else cell.ljust(w)
                               for c, (cell, w) in enumerate(zip(row, widths))).rstrip()
            for row in rows]
