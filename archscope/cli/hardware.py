"""`archscope hardware`: the accelerator catalog, and the local CPU measured on request."""

from __future__ import annotations

import click

from archscope.cli.group import cli
from archscope.cli.options import _echo_json, format_option

_DTYPES = ("bf16", "fp8", "int8", "fp4")


def _flops_cell(part, dtype: str) -> str:
    value = part.flops(dtype)
    if value is not None:
        return f"{value / 1e12:,.1f}"
    return "n/a" if dtype in part.unsupported or part.measured else "?"


def _table(parts) -> str:
    """One row per part, then its source: the datasheet each row's figures come from."""
    from archscope.units import text_table

    head = ["name", "memory GB", "bandwidth GB/s", *(f"{d} TFLOP/s" for d in _DTYPES),
            "interconnect", "source"]
    rows = [head]
    for k, p in enumerate(parts, 1):
        link = f"{p.interconnect} {p.interconnect_bandwidth / 1e9:,.0f} GB/s" \
            if p.interconnect_bandwidth else p.interconnect
        rows.append([p.name, f"{p.memory_bytes / 1e9:,.0f}", f"{p.memory_bandwidth / 1e9:,.0f}",
                     *(_flops_cell(p, d) for d in _DTYPES), link, f"[{k}]"])
    lines = text_table(rows, right={1, 2, 3, 4, 5, 6})
    lines.append("")
    lines.append("  Dense peaks (half the datasheets' with-sparsity figures); GB = 10^9 bytes; "
                 "interconnect per GPU,")
    lines.append("  both directions summed; n/a = no tensor-core path; ? = no source found.")
    for k, p in enumerate(parts, 1):
        where = f" ({p.source_url})" if p.source_url else ""
        lines.append(f"  [{k}] {p.title}: {p.source_title}{where}")
        if p.measured or p.notes:
            lines.append(f"      {p.notes}")
    return "\n".join(lines) + "\n"


@cli.command("hardware")
@click.argument("names", nargs=-1)
@click.option("--probe-cpu", is_flag=True,
              help="Also measure this machine's CPU: memory bandwidth (a large tensor copy) and "
                   "matmul FLOP/s in fp32 and bf16, about a second (imports torch).")
@format_option("json", default="text")
def hardware_cmd(names, probe_cpu, fmt):
    """The accelerator catalog: memory, bandwidth, dense peak FLOP/s per dtype, interconnect,
    and the vendor datasheet every figure comes from. NAMES picks parts (`cpu` measures this
    machine); an unknown name is refused with the closest known ones.

    \b
    Examples:
      archscope hardware
      archscope hardware h100-sxm mi300x --format json
      archscope hardware --probe-cpu
    """
    from archscope.hardware import catalog, get_hardware

    parts = [get_hardware(n) for n in names] if names else list(catalog().values())
    if probe_cpu and not any(p.measured for p in parts):
        parts.append(get_hardware("cpu"))
    if fmt == "json":
        _echo_json([p.row() for p in parts])
    else:
        click.echo(_table(parts), nl=False)
