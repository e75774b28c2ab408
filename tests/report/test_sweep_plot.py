"""`sweep --plot`'s figure: each axis in its column's unit (the byte family in use, GFLOP,
billions of parameters), the points drawn at the rows' values in that unit, and the front's
numbers never overlapping, each one named in the legend."""

from __future__ import annotations

import itertools

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg

from archscope.estimate.sweep import parse_grid, sweep
from archscope.report.figures_sweep import sweep_figure
from archscope.report.terminal.sweep import value_text
from archscope.spec import load_spec
from archscope.units import set_byte_units

GRID = ("attention.n_kv_heads=1,2,4,8,16,32", "n_layers=8,9,10,16,24")


@pytest.fixture(scope="module")
def result():
    return sweep(load_spec("llama-3.2-1b"), parse_grid(GRID), 4096)


@pytest.fixture(autouse=True)
def _decimal_after():
    yield
    set_byte_units("GB")


@pytest.mark.parametrize("units, x_unit, per_unit", [("GB", "(MB)", 1e6), ("GiB", "(MiB)", 2**20)])
def test_axes_carry_units_and_the_points_are_the_rows(result, units, x_unit, per_unit):
    set_byte_units(units)
    fig = sweep_figure(result, "kv_cache_bytes", "-params_total")
    ax = fig.axes[0]
    assert ax.get_xlabel() == f"kv_cache_bytes {x_unit}"
    assert ax.get_ylabel() == "params_total (billions), higher is better"
    points = ax.collections[0].get_offsets()
    for (x, y), row in zip(points, result.rows):
        assert x * per_unit == pytest.approx(row["kv_cache_bytes"])
        assert y * 1e9 == pytest.approx(row["params_total"])


def test_flops_and_weights_axes(result):
    ax = sweep_figure(result, "flops_per_token", "weights_bytes").axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("flops_per_token (GFLOP)",
                                                  "weights_bytes (GB)")
    ax = sweep_figure(result, "n_layers", "prefill_flops").axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("n_layers", "prefill_flops (TFLOP)")


def test_the_front_numbers_never_overlap_and_the_legend_names_them(result):
    # this front has points a few pixels apart (n_layers 8, 9, 10), where numbers would overlap
    fig = sweep_figure(result, "flops_per_token", "-kv_cache_bytes")
    renderer = FigureCanvasAgg(fig).get_renderer()
    ax = fig.axes[0]
    numbers = ax.texts
    assert len(numbers) >= 3
    boxes = [t.get_window_extent(renderer) for t in numbers]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    named = {k: v for k, _, v in (t.partition(": ") for t in legend) if k.isdigit()}
    assert sorted(named) == sorted(t.get_text() for t in numbers)
    for text in numbers:  # each number sits on the front point whose grid values it names
        row = next(r for r in result.rows
                   if ", ".join(f"{a.key}={value_text(r[a.key])}" for a in result.axes)
                   == named[text.get_text()])
        assert text.xy[0] * 1e9 == pytest.approx(row["flops_per_token"])
