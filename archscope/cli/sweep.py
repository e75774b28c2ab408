"""`archscope sweep`: one model's record over a grid of what-ifs (no torch)."""

from __future__ import annotations

import click

from archscope.cli.group import cli
from archscope.cli.options import (_echo_json, _estimate_options, _set_option, format_option,
                                   units_option)
from archscope.errors import InputError, quote


@cli.command()
@click.argument("model")
@click.option("--grid", "grid", multiple=True, required=True, metavar="KEY=V1,V2,...",
              help="A spec key (dotted, as --set takes it) and the values to sweep it over; "
                   "repeatable: every combination of the grids is one variant.")
@_set_option
@_estimate_options
@click.option("--plot", metavar="X,Y",
              help="Also draw two row columns and their Pareto front (both minimised; -COLUMN "
                   "maximises one) to --out, each axis in its unit (sizes in --units).")
@click.option("--out", type=click.Path(dir_okay=False), metavar="FILE.png",
              help="Where --plot writes its PNG (its path is printed on stderr).")
@units_option
@format_option("csv", "json", "markdown", default="text")
def sweep(model, grid, overrides, seq_len, batch, dtype, kv_dtype, attention_flops, mla_flops,
          plot, out, fmt):
    """One model's parameters, cache, FLOPs and memory over every combination of --grid.

    Each variant goes through the same validation as --set; a combination that is no valid
    spec is listed with its reason (json: `invalid`; csv: on stderr). Rows are compare's JSON
    element plus the grid values under their keys. A value cannot hold a comma.

    \b
    Examples:
      archscope sweep llama-3.2-1b --grid attention.n_kv_heads=1,2,4,8 --grid n_layers=16,24,32
      archscope sweep llama-3.1-8b --grid ffn.d_ff=8192,14336 --seq-len 32768 --format csv
      archscope sweep llama-3.2-1b --grid attention.n_kv_heads=1,2,4,8,16,32 \\
          --grid n_layers=8,16,24 --plot kv_cache_bytes,-params_total --out front.png
    """
    from archscope.estimate.sweep import parse_grid, sweep as run_sweep
    from archscope.spec import load_spec

    axes = parse_grid(grid)
    x, y = _plot_columns(plot, out)
    if out:
        from archscope.writes import check_destination

        check_destination(out, "--out", folder=False)
    spec = load_spec(model, overrides)
    from archscope.spec.weight_formats import checkpoint_format

    result = run_sweep(spec, axes, seq_len, batch, dtype or checkpoint_format(spec), kv_dtype,
                       attention_flops, mla_flops)
    if plot:  # before anything is printed: a wrong column is bad input, with no output
        _check_plot(result, x, y)
    if fmt == "json":
        _echo_json({"model": result.model, "seq_len": seq_len,
                    "grid": {a.key: list(a.values) for a in axes},
                    "rows": result.rows, "invalid": result.invalid})
    else:
        from archscope.report.terminal.sweep import invalid_lines, render

        click.echo(render(result, "table" if fmt == "text" else fmt), nl=False)
        if fmt == "csv":
            for line in invalid_lines(result):
                click.echo(f"invalid: {line}", err=True)
    if plot:
        _write_plot(result, x, y, out)


def _plot_columns(plot: str | None, out: str | None) -> tuple[str | None, str | None]:
    if bool(plot) != bool(out):
        raise InputError("--plot X,Y and --out FILE.png go together")
    if not plot:
        return None, None
    cols = [c.strip() for c in plot.split(",")]
    if len(cols) != 2 or not all(c.removeprefix("-") for c in cols):
        raise InputError(f"--plot {quote(plot)}: expected two columns, X,Y")
    return cols[0], cols[1]


def _check_plot(result, x: str, y: str) -> None:
    if not result.rows:
        raise InputError("--plot: no valid variant to draw")

    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    numeric = [k for k in result.rows[0] if all(number(r[k]) for r in result.rows)]
    for col in (x, y):
        if col.removeprefix("-") not in numeric:
            raise InputError(f"--plot: {quote(col.removeprefix('-'))} is not a numeric column; "
                             f"one of {', '.join(numeric)}")


def _write_plot(result, x: str, y: str, out: str) -> None:
    from archscope.report.figures_sweep import sweep_png
    from archscope.writes import write_file_atomic

    write_file_atomic(out, sweep_png(result, x, y), what="--out")
    # stderr: stdout stays the table, CSV or JSON a script reads
    click.echo(f"wrote {out}: {y} against {x}, {len(result.rows):,} variants", err=True)
