"""The hybrids' figure: what a sequence holds (KV cache + constant state) against the context,
each hybrid beside the attention-only preset closest to it in parameters.

A state mixer's state does not grow, so at short contexts a hybrid may hold more than an
attention model of its size and at long ones far less: the figure marks (a dot, and in the
legend) the first context of the records' series at which the hybrid holds no more than its
peer. Every value is the records' (`series.kv_cache_bytes` and `series.state_bytes`, from
estimate/record.py).
"""

from __future__ import annotations

import math

import matplotlib
from matplotlib.figure import Figure

from archscope.report.figure_panels import tokens
from archscope.report.figures import FIGURE_WIDTH, _context_axes, _side_legend


def held(r: dict) -> list[int]:
    """KV cache plus constant state at each context of the record's series."""
    s = r["series"]
    return [kv + state for kv, state in zip(s["kv_cache_bytes"], s["state_bytes"])]


def is_hybrid(r: dict) -> bool:
    return bool(r["mixers"])


def peer(hybrid: dict, records: list[dict]) -> dict | None:
    """The attention-only preset nearest in total parameters (by ratio)."""
    others = [r for r in records if not is_hybrid(r)]
    size = hybrid["params"]["total"]
    return min(others, key=lambda r: abs(math.log(r["params"]["total"] / size)), default=None)


def crossing(a: dict, b: dict) -> int | None:
    """The first context of both series at which `a` holds no more than `b`, if any."""
    theirs = dict(zip(b["series"]["context"], held(b)))
    for n, mine in zip(a["series"]["context"], held(a)):
        if n in theirs and mine <= theirs[n]:
            return n
    return None


def cache_state_figure(records: list[dict]) -> Figure:
    fig = Figure(figsize=(FIGURE_WIDTH, 6.5))
    dtype = records[0]["kv_cache"][0]["dtype"]
    ax = _context_axes(fig, f"Cache + constant state per sequence vs context ({dtype}, batch 1): "
                            "hybrids (solid) beside attention-only peers (dashed)",
                       "bytes held per sequence (log scale)", "B")
    colors = matplotlib.colormaps["tab10"]
    hybrids = [r for r in records if is_hybrid(r)]
    drawn: set[str] = set()
    for i, r in enumerate(hybrids):
        color, other = colors(i % 10), peer(r, records)
        n = crossing(r, other) if other is not None else None
        # the crossing goes in the legend and as a dot on the line: text on the axes overlaps
        label = r["name"] + (f" (≤ {other['name']} from {tokens(n, None)} tokens)" if n else "")
        ax.plot(r["series"]["context"], held(r), color=color, linewidth=2.6, label=label)
        if n is not None:
            ax.plot([n], [dict(zip(r["series"]["context"], held(r)))[n]], "o", color=color,
                    markersize=7)
        if other is not None and other["name"] not in drawn:
            ax.plot(other["series"]["context"], held(other), color=color, linestyle="--",
                    linewidth=1.4, label=f"{other['name']} (peer of {r['name']})")
            drawn.add(other["name"])
    if hybrids:
        _side_legend(ax)
    else:
        ax.text(0.5, 0.5, "no hybrid presets", transform=ax.transAxes, ha="center")
    fig.tight_layout()
    return fig
