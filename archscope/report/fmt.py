"""Number formatting for people: thousands separators, B/M/K suffixes, MB (10^6) and MiB (2^20)."""

from __future__ import annotations

from typing import Callable

from archscope.units import DASH, commas, human, num, sci, text_table  # noqa: F401  (re-exported)


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


def layers_text(indices: list[int]) -> str:
    """[0, 2, 4, ..., 94] -> '0, 2, ..., 94' (a stride); [0, 1, 2, 5] -> '0-2, 5'."""
    steps = {b - a for a, b in zip(indices, indices[1:])}
    if len(indices) > 3 and len(steps) == 1 and steps != {1}:
        return f"{indices[0]}, {indices[1]}, ..., {indices[-1]}"
    return layer_ranges(indices)


def yes_no(flag: bool) -> str:
    return "yes" if flag else "no"


def flops_text(n: float) -> str:
    """human() with a P (10^15) step: whole prefills of long prompts reach petaFLOPs."""
    return f"{n / 1e15:.3g}P" if n >= 1e15 else human(n)


def layers_label(group) -> str:
    """'layer 0' or 'layers 1-59' from a record with `layers` (text) and `count`, or from a list
    of indices."""
    if isinstance(group, dict):
        text, count = group["layers"], group["count"]
    else:
        text, count = layers_text(group), len(group)
    return f"layer {text}" if count == 1 else f"layers {text}"


def or_dash(value, fmt: Callable = str) -> str:
    return DASH if value is None else fmt(value)
