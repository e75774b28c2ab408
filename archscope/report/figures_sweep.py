"""`archscope sweep --plot X,Y`: every variant as a point, the Pareto front of the two columns
joined (estimate/sweep.py `pareto` picks it), its points numbered and the numbers' grid values
in the legend.

Each axis is in the unit its column counts: sizes in the byte family in use (archscope/units.py),
FLOPs in SI steps, parameters in millions or billions. The layout is fixed (no tight_layout), so
the positions read while numbering are the drawn ones: a number goes where no other is within
ROOM points, so numbers never overlap.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from archscope.estimate.sweep import Sweep, pareto
from archscope.report.figures import RC, png_bytes
from archscope.report.terminal.sweep import value_text
from archscope.units import byte_unit, scale_of, unit_bytes

LABELLED_MAX = 12  # front points numbered; the legend lists each one's grid values
ROOM = 18  # display pixels between two numbered points (a number: about 10 by 11)
SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))
COUNTS = ((1e12, "trillions"), (1e9, "billions"), (1e6, "millions"), (1e3, "thousands"))


def axis_unit(col: str, values: list[float]) -> tuple[float, str | None]:
    """(divisor, unit) for an axis of a row column: the unit that suits its largest value;
    (1, None) for a plain number (a grid value, a length)."""
    name = col.removeprefix("-")
    top = max((abs(v) for v in values), default=0)
    if "bytes" in name:
        scale = scale_of(top)
        return unit_bytes(scale), byte_unit(scale)
    if "flops" in name:
        return next(((d, f"{p}FLOP") for d, p in SI if top >= d), (1, "FLOP"))
    if name.startswith("params"):
        return next(((d, w) for d, w in COUNTS if top >= d), (1, "parameters"))
    return 1, None


def axis_label(col: str, unit: str | None) -> str:
    """'kv_cache_bytes (GB)'; '-params_total' adds that higher is better."""
    name = col.removeprefix("-") + (f" ({unit})" if unit else "")
    return f"{name}, higher is better" if col.startswith("-") else name


def sweep_figure(s: Sweep, x: str, y: str) -> Figure:
    """x, y: row columns (a leading '-' maximises that one when picking the front)."""
    import matplotlib

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=(11, 6))
        ax = fig.add_axes((0.08, 0.1, 0.56, 0.8))  # the legend takes the right
        (xs, x_unit), (ys, y_unit) = _scaled(s.rows, x), _scaled(s.rows, y)
        ax.scatter(xs, ys, s=12, color="0.7", label=f"{len(xs):,} variants")
        front = pareto(s.rows, x, y)
        ax.plot([xs[i] for i in front], [ys[i] for i in front], "o-", color="tab:red",
                markersize=5, label=f"Pareto front ({len(front)})")
        for values, set_scale in ((xs, ax.set_xscale), (ys, ax.set_yscale)):
            if min(values) > 0 and max(values) / min(values) > 100:
                set_scale("log")
        ax.set_xlabel(axis_label(x, x_unit))
        ax.set_ylabel(axis_label(y, y_unit))
        ax.set_title(f"{s.model}: {len(s.rows):,} variants at seq_len {s.seq_len:,}")
        ax.grid(True, alpha=0.3)
        _number_front(ax, [(xs[i], ys[i]) for i in front],
                      [", ".join(f"{a.key}={value_text(s.rows[i][a.key])}" for a in s.axes)
                       for i in front])
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return fig


def _number_front(ax, points: list[tuple[float, float]], texts: list[str]) -> None:
    """Number the front's points, in x order, where a number has room (one point of a tight
    cluster speaks for it), at most LABELLED_MAX; the legend says what each number is."""
    ax.get_xlim(), ax.get_ylim()  # settle the limits: the transform below reads them
    placed = []
    for point, text in zip(points, texts):
        at = ax.transData.transform(point)
        if len(placed) == LABELLED_MAX or any(math.dist(at, p) < ROOM for p in placed):
            continue
        placed.append(at)
        ax.annotate(str(len(placed)), point, fontsize=8, xytext=(3, 3),
                    textcoords="offset points")
        ax.plot([], [], " ", label=f"{len(placed)}: {text}")


def sweep_png(s: Sweep, x: str, y: str) -> bytes:
    return png_bytes(sweep_figure(s, x, y))


def _scaled(rows: list[dict], col: str) -> tuple[list[float], str | None]:
    """The column's values in its axis unit, and the unit."""
    values = [float(r[col.removeprefix("-")]) for r in rows]
    divisor, unit = axis_unit(col, values)
    return [v / divisor for v in values], unit
