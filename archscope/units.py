"""Numbers written for people: thousands separators, B/M/K suffixes, spec values as papers write
them. Pure string functions, shared by the component kinds' wording and every report surface."""

from __future__ import annotations

import re
from contextvars import ContextVar

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


# Byte sizes for people. One family on every surface: decimal (kB, MB, GB, TB: 10^3 steps, what
# GPU datasheets and serving engines print) by default, or binary (KiB, MiB, GiB, TiB: 2^10
# steps, what `nvidia-smi` and torch's allocator print) when asked (the commands' --units).
# JSON always carries plain byte counts.
DECIMAL, BINARY = "GB", "GiB"
_STEPS = {DECIMAL: (1000, ("B", "kB", "MB", "GB", "TB")),
          BINARY: (1024, ("B", "KiB", "MiB", "GiB", "TiB"))}
_SCALES = {"": 0, "k": 1, "K": 1, "M": 2, "G": 3, "T": 4}
_family: ContextVar[str] = ContextVar("archscope_byte_units", default=DECIMAL)


def byte_units() -> str:
    """The family in use: 'GB' (decimal) or 'GiB' (binary)."""
    return _family.get()


def set_byte_units(family: str) -> None:
    """Use `family` ('GB' or 'GiB', any case) for every size printed from now on."""
    key = {"gb": DECIMAL, "gib": BINARY}.get(str(family).lower())
    if key is None:
        raise ValueError(f"unknown byte units {family!r}: expected GB or GiB")
    _family.set(key)


def byte_unit(scale: str) -> str:
    """The unit at `scale` ('M', 'G', ...) in the family in use: 'G' -> 'GB' or 'GiB'."""
    return _STEPS[byte_units()][1][_SCALES[scale]]


def unit_bytes(scale: str) -> int:
    """Bytes in the unit at `scale` in the family in use: 'G' -> 10^9 or 2^30."""
    return _STEPS[byte_units()][0] ** _SCALES[scale]


def scale_of(nbytes: float) -> str:
    """The scale of the largest unit that keeps nbytes >= 1 of it: '' (bytes), 'k', ... 'T'."""
    base, names = _STEPS[byte_units()]
    step = 0
    while step < len(names) - 1 and abs(nbytes) >= base ** (step + 1):
        step += 1
    return "kMGT"[step - 1] if step else ""


def in_unit(nbytes: float, scale: str, digits: int = 2) -> str:
    """nbytes in the unit at `scale`, the number only: (16_060_522_496, 'G') -> '16.06'."""
    return f"{nbytes / unit_bytes(scale):,.{digits}f}"


def size(nbytes: float, scale: str | None = None, digits: int = 2) -> str:
    """'16.06 GB' (or '14.96 GiB'): at `scale`, or the largest unit that keeps the number >= 1."""
    scale = scale_of(nbytes) if scale is None else scale
    return f"{in_unit(nbytes, scale, digits if scale else 0)} {byte_unit(scale)}"


def units_note() -> str:
    """The footnote naming the family in use: 'GB = 10^9 bytes' or 'GiB = 2^30 bytes'."""
    return "GB = 10^9 bytes" if byte_units() == DECIMAL else "GiB = 2^30 bytes"
