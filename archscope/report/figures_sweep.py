"""`archscope sweep --plot X,Y`: every variant as a point, the Pareto front of the two columns
joined and labelled with its grid values (estimate/sweep.py `pareto` picks it)."""

from __future__ import annotations

from matplotlib.figure import Figure

from archscope.estimate.sweep import Sweep, pareto
from archscope.report.figures import RC, png_bytes
from archscope.report.terminal.sweep import value_text

LABELLED_MAX = 12  # front points named by their grid values; more would overlap


def sweep_figure(s: Sweep, x: str, y: str) -> Figure:
    """x, y: row columns (a leading '-' maximises that one when picking the front)."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(8, 6))
        ax = fig.add_subplot()
        xs, ys = _column(s.rows, x), _column(s.rows, y)
        ax.scatter(xs, ys, s=12, color="0.7", label=f"{len(xs):,} variants")
        front = pareto(s.rows, x, y)
        ax.plot([xs[i] for i in front], [ys[i] for i in front], "o-", color="tab:red",
                markersize=5, label=f"Pareto front ({len(front)})")
        if len(front) <= LABELLED_MAX:
            for i in front:
                text = ", ".join(f"{a.key}={value_text(s.rows[i][a.key])}" for a in s.axes)
                ax.annotate(text, (xs[i], ys[i]), fontsize=7, xytext=(4, 4),
                            textcoords="offset points")
        for values, set_scale in ((xs, ax.set_xscale), (ys, ax.set_yscale)):
            if min(values) > 0 and max(values) / min(values) > 100:
                set_scale("log")
        ax.set_xlabel(_label(x))
        ax.set_ylabel(_label(y))
        ax.set_title(f"{s.model}: {len(s.rows):,} variants at seq_len {s.seq_len:,}")
        ax.grid(True, alpha=0.3)
        ax.legend(loc="best")
        fig.tight_layout()
    return fig


def sweep_png(s: Sweep, x: str, y: str) -> bytes:
    return png_bytes(sweep_figure(s, x, y))


def _column(rows: list[dict], col: str) -> list[float]:
    return [float(r[col.removeprefix("-")]) for r in rows]


def _label(col: str) -> str:
    name = col.removeprefix("-")
    return f"{name} (higher is better)" if col.startswith("-") else name
