"""Figures from the model records: DataFrame-shaped series -> matplotlib Figure -> PNG bytes.

Deterministic: the Agg renderer with the default style, fixed sizes and dpi, and no
'Software' metadata in the PNG, so the same records give the same bytes run after run.
Nothing is written here; `png_bytes` returns the file's content.
"""

from __future__ import annotations

import io

import matplotlib
import matplotlib.style
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from archscope.report.figure_panels import family_panels, si, tokens
from archscope.report.families import ordered
from archscope.report.fmt import human

DPI = 100
RC = {"font.size": 9, "axes.titlesize": 11, "legend.fontsize": 8, "svg.hashsalt": "archscope",
      "figure.dpi": DPI, "savefig.dpi": DPI}
FIGURE_WIDTH = 12  # inches: room for a two-column legend beside the axes
LEGEND_ROWS = 30  # entries per legend column


def png_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _context_axes(fig: Figure, title: str, ylabel: str, unit: str):
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(tokens))
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_formatter(si(unit))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("context length (tokens, log scale)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    return ax


def _side_legend(ax) -> None:
    """The legend beside the axes, in as many columns as it needs to stay within the figure
    (one line per preset: thirty-odd presets no longer fit one column)."""
    entries = len(ax.get_legend_handles_labels()[1])
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              ncol=1 + (entries - 1) // LEGEND_ROWS)


def _kv_lines(r: dict) -> list:
    """The cache, and MLA's decompressed size beside it (dotted)."""
    s = r["series"]
    lines = [(s["kv_cache_bytes"], {}, "")]
    if s["kv_cache_decompressed_bytes"] != s["kv_cache_bytes"]:
        lines.append((s["kv_cache_decompressed_bytes"], {}, " decompressed"))
    return lines


def kv_cache_figure(records: list[dict]) -> Figure:
    """Every preset up to its context, one panel per family; a window or chunk on every layer
    flattens the line, on some layers only bends it."""
    dtype = records[0]["kv_cache"][0]["dtype"]
    return family_panels(records, f"KV cache vs context length ({dtype}, batch 1)", "B",
                         _kv_lines)


def flops_figure(records: list[dict]) -> Figure:
    mla = records[0]["decode_flops"][0]["mla_convention"]
    return family_panels(records, f"Decode FLOPs per token vs context (MLA: {mla} convention)",
                         "FLOP", lambda r: [(r["series"]["decode_flops"], {}, "")])


def breakdown_shares(r: dict) -> dict[str, float]:
    """Percent of total params: embedding, attention, state mixers (hybrids: 0 elsewhere), FFN
    used per token, idle experts, norms, head."""
    p, g = r["params"], r["params"]["groups"]
    idle = p["total"] - p["active"]
    parts = {"embedding": g["embedding"], "attention": g["attention"],
             "state mixers": g.get("mixer", 0),
             "FFN (active per token)": g["ffn"] - idle, "FFN (experts idle per token)": idle,
             "norms": g["norms"], "lm_head (untied)": g["head"]}
    return {k: 100 * v / p["total"] for k, v in parts.items()}


def params_figure(records: list[dict]) -> Figure:
    records = ordered(records)
    fig = Figure(figsize=(10, 7))
    ax = fig.add_subplot(1, 1, 1)
    colors = matplotlib.colormaps["tab10"]
    names = [r["name"] for r in records][::-1]
    shares = [breakdown_shares(r) for r in records][::-1]
    left = [0.0] * len(records)
    for j, key in enumerate(shares[0]):
        widths = [s[key] for s in shares]
        ax.barh(names, widths, left=left, label=key, color=colors(j),
                hatch="//" if "idle" in key else None, edgecolor="white", linewidth=0.5)
        left = [a + b for a, b in zip(left, widths)]
    for y, r in enumerate(records[::-1]):
        p = r["params"]
        text = human(p["total"])
        if p["active"] != p["total"]:
            text += f" ({human(p['active'])} active)"
        ax.text(101, y, text, va="center", fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of total parameters (%)")
    ax.set_title("Parameter breakdown (unique tensors; total and active at the right)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


def weights_figure(records: list[dict], dtypes=("fp32", "bf16", "int8", "int4-g128")) -> Figure:
    records = ordered(records)
    fig = Figure(figsize=(10, 8))
    ax = fig.add_subplot(1, 1, 1)
    colors = matplotlib.colormaps["tab10"]
    height = 0.8 / len(dtypes)
    n = len(records)
    for j, dtype in enumerate(dtypes):
        ys = [n - 1 - i + 0.4 - (j + 0.5) * height for i in range(n)]
        ax.barh(ys, [r["weights_bytes"][dtype] for r in records], height=height,
                label=dtype + (" (= fp16)" if dtype == "bf16" else ""), color=colors(j))
    ax.set_yticks(range(n))
    ax.set_yticklabels([r["name"] for r in records][::-1])
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(si("B"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("weights (log scale; 1 GB = 10^9 bytes; scales included, embeddings and "
                  "lm_head 16-bit)")
    ax.set_title("Weights memory by format (every stored tensor priced in it)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig
