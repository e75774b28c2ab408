"""Figures of a series against the context, one panel per family (families.family_groups):
the family's models in distinct colours with a legend of at most a handful of entries, every
other preset drawn thin in grey behind them, all panels on the same axes.

Every value is the records' (`series`, from estimate/record.py); nothing is computed here.
"""

from __future__ import annotations

import math
from typing import Callable

import matplotlib
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullLocator

from archscope.report.families import family_groups

COLUMNS = 4
PANEL = (3.4, 2.5)  # inches per panel
GREY = {"color": "0.85", "linewidth": 0.7, "zorder": 1}

# a record -> its lines: (values along series.context, extra style, label suffix); the first is
# the record's own line, the others (e.g. MLA's decompressed cache) are drawn dotted beside it
Lines = Callable[[dict], list[tuple[list, dict, str]]]


def si(unit: str):
    """Tick labels like '10 MB', '1 GB', '100 GFLOP' for values given in base units."""
    def fmt(value, _pos):
        for div, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")):
            if value >= div:
                return f"{value / div:g} {prefix}{unit}"
        return f"{value:g} {unit}"
    return FuncFormatter(fmt)


def tokens(value, _pos) -> str:
    return f"{value / 1024:g}K" if value >= 1024 else f"{value:g}"


def context_axes(ax, unit: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(tokens))
    ax.yaxis.set_major_locator(LogLocator(base=10, numticks=6))
    ax.yaxis.set_major_formatter(si(unit))
    ax.xaxis.set_minor_locator(NullLocator())  # minor log ticks: most of a figure's draw time
    ax.yaxis.set_minor_locator(NullLocator())
    ax.grid(True, which="major", alpha=0.3)


def family_panels(records: list[dict], title: str, unit: str, lines: Lines) -> Figure:
    groups = family_groups(records)
    rows = math.ceil(len(groups) / COLUMNS)
    fig = Figure(figsize=(PANEL[0] * COLUMNS, PANEL[1] * rows + 0.6))
    axes = fig.subplots(rows, COLUMNS, sharex=True, sharey=True, squeeze=False)
    colors = matplotlib.colormaps["tab10"]
    for ax, (family, members) in zip(axes.flat, groups):
        context_axes(ax, unit)
        for r in records:
            if r["family"] != family:
                ax.plot(r["series"]["context"], lines(r)[0][0], **GREY)
        for i, r in enumerate(members):
            color = colors(i % 10)
            for j, (ys, style, suffix) in enumerate(lines(r)):
                ax.plot(r["series"]["context"], ys, color=color, zorder=3,
                        **({"linewidth": 1.8, "label": r["name"] + suffix} if j == 0 else
                           {"linewidth": 1.0, "linestyle": ":", "label": r["name"] + suffix}),
                        **style)
        ax.set_title(family, fontsize=9)
        ax.legend(loc="upper left", fontsize=6.5, frameon=False, handlelength=1.5)
    for ax in axes.flat[len(groups):]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=11, y=1 - 0.15 / fig.get_figheight())
    fig.supxlabel("context length (tokens, log scale)", fontsize=9)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.5 / fig.get_figheight(),
                        top=1 - 0.75 / fig.get_figheight(), wspace=0.08, hspace=0.25)
    return fig
