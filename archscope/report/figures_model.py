"""A deep dive's own figure: the page's model among its peers (families.peers: its family and
the presets nearest its size). Left, what a sequence holds against the context (KV cache plus a
hybrid's constant state); right, the parameter breakdown beside the same peers. The model is
drawn bold and black, each peer thin in its own colour.

Every value is the records' (`series`, `params`); nothing is computed here.
"""

from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure

from archscope.report.families import peers
from archscope.report.figure_panels import context_axes
from archscope.report.figures import breakdown_shares
from archscope.report.figures_hybrid import held

SIZE = (10, 3.2)  # inches: small, one per preset
PARTS = matplotlib.colormaps["Pastel1"]


def path(name: str) -> str:
    """The figure's path under the report folder."""
    return f"figures/models/{name}.png"


def _held_panel(ax, r: dict, others: list[dict], colors) -> None:
    hybrid = any(o["mixers"] for o in [r, *others])
    context_axes(ax, "B")
    for i, o in enumerate(others):
        ax.plot(o["series"]["context"], held(o), color=colors(i), linewidth=1.1,
                label=f"{o['name']} ({o['family']})")
    ax.plot(r["series"]["context"], held(r), color="black", linewidth=2.8, label=r["name"],
            zorder=4)
    dtype = r["kv_cache"][0]["dtype"]
    ax.set_title(("KV cache + state" if hybrid else "KV cache") + f" per sequence ({dtype})",
                 fontsize=9)
    ax.set_xlabel("context length (tokens)", fontsize=8)
    ax.legend(loc="upper left", fontsize=6.5, frameon=False, handlelength=1.5)


def _params_panel(ax, r: dict, others: list[dict]) -> None:
    rows = [r, *others][::-1]
    names = [o["name"] for o in rows]
    shares = [breakdown_shares(o) for o in rows]
    left = [0.0] * len(rows)
    for j, key in enumerate(shares[0]):
        widths = [s[key] for s in shares]
        ax.barh(names, widths, left=left, label=key, color=PARTS(j),
                hatch="//" if "idle" in key else None, edgecolor="white", linewidth=0.5)
        left = [a + b for a, b in zip(left, widths)]
    for label in ax.get_yticklabels():
        if label.get_text() == r["name"]:
            label.set_fontweight("bold")
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of total parameters (%)", fontsize=8)
    ax.set_title("Parameter breakdown", fontsize=9)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, fontsize=6.5,
              frameon=False)


def model_figure(r: dict, records: list[dict]) -> Figure:
    others = peers(r, records)
    colors = matplotlib.colormaps["tab10"]
    fig = Figure(figsize=SIZE)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.1, 1]})
    _held_panel(left, r, others, colors)
    _params_panel(right, r, others)
    fig.suptitle(f"{r['name']} among its family and the presets nearest its size", fontsize=10)
    fig.subplots_adjust(left=0.07, right=0.99, bottom=0.3, top=0.85, wspace=0.32)
    return fig
