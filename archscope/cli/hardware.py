"""`archscope hardware`: the accelerator catalog, and the local CPU measured on request."""

from __future__ import annotations

import click

from archscope.cli.group import cli
from archscope.cli.options import (TABLE_FORMATS, _echo_records, format_option,
                                   units_option)

_DTYPES = ("bf16", "fp8", "int8", "fp4")


def _flops_cell(part, dtype: str) -> str:
    value = part.flops(dtype)
    if value is not None:
        return f"{value / 1e12:,.1f}"
    return "n/a" if dtype in part.unsupported or part.measured else "?"


def _table(parts, markdown: bool = False) -> str:
    """One row per part, then its source: the datasheet each row's figures come from; sizes
    in the --units family (GB or GiB, named in the titles)."""
    from archscope.tables import pipe_table
    from archscope.units import byte_unit, in_unit, text_table, units_note

    giga = byte_unit("G")
    head = ["name", f"memory {giga}", f"bandwidth {giga}/s",
            *(f"{d} TFLOP/s" for d in _DTYPES), "interconnect", "source"]
    rows = [head]
    for k, p in enumerate(parts, 1):
        link = f"{p.interconnect} {in_unit(p.interconnect_bandwidth, 'G', 0)} {giga}/s" \
            if p.interconnect_bandwidth else p.interconnect
        rows.append([p.name, in_unit(p.memory_bytes, "G", 0), in_unit(p.memory_bandwidth, "G", 0),
                     *(_flops_cell(p, d) for d in _DTYPES), link, f"[{k}]"])
    notes = [f"Dense peaks (half the datasheets' with-sparsity figures); {units_note()}; "
             "interconnect per GPU,", "both directions summed; n/a = no tensor-core path; ? = "
             "no source found."]
    sources = []
    for k, p in enumerate(parts, 1):
        where = f" ({p.source_url})" if p.source_url else ""
        sources.append(f"[{k}] {p.title}: {p.source_title}{where}"
                       + (f"\n      {p.notes}" if p.measured or p.notes else ""))
    if markdown:  # the notes one paragraph, the sources a list
        return "\n".join([pipe_table(rows), "", " ".join(notes), "",
                          *(f"- {s}" for s in sources)]) + "\n"
    lines = text_table(rows, right={1, 2, 3, 4, 5, 6})
    return "\n".join(lines + ["", *(f"  {n}" for n in notes + sources)]) + "\n"


@cli.command("hardware")
@click.argument("names", nargs=-1)
@click.option("--probe-cpu", is_flag=True,
              help="Also measure this machine's CPU: memory bandwidth (a large tensor copy) and "
                   "matmul FLOP/s in fp32 and bf16, about a second (imports torch).")
@format_option(*TABLE_FORMATS)
@units_option
def hardware_cmd(names, probe_cpu, fmt):
    """The accelerator catalog: memory, bandwidth, dense peak FLOP/s per dtype, interconnect,
    and the vendor datasheet every figure comes from. NAMES picks parts (`cpu` measures this
    machine); an unknown name is refused with the closest known ones.

    \b
    Examples:
      archscope hardware
      archscope hardware h100-sxm mi300x --format json
      archscope hardware --probe-cpu
      archscope hardware --format csv      # the json rows flattened: bytes, FLOP/s
    """
    from archscope.hardware import catalog, get_hardware

    parts = [get_hardware(n) for n in names] if names else list(catalog().values())
    if probe_cpu and not any(p.measured for p in parts):
        parts.append(get_hardware("cpu"))
    if fmt in ("json", "csv"):
        _echo_records([p.row() for p in parts], fmt)
    else:
        click.echo(_table(parts, fmt == "markdown"), nl=False)
