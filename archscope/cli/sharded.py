"""`archscope plan` and the sharded side of `archscope profile --tp/--ep`: the model split over
ranks with torch.distributed (archscope/distributed), beside the analytic plan."""

from __future__ import annotations

import os

import click

from archscope.cli.group import cli
from archscope.cli.options import (RANKS, TABLE_FORMATS, _echo_json, _echo_records,
                                   _set_option, format_option)
from archscope.spec.limits import CPU_RANKS_PER_CPU

SPLIT_HELP = {"tp": "Tensor-parallel ranks (one process each) [default: 1].",
              "ep": "Expert-parallel groups: routed experts split whole over them (= --tp) "
                    "[default: 1]."}


def split_options(f):
    f = click.option("--ep", type=RANKS, default=1, help=SPLIT_HELP["ep"])(f)
    return click.option("--tp", type=RANKS, default=1, help=SPLIT_HELP["tp"])(f)


@cli.command("plan")
@click.argument("model")
@split_options
@_set_option
@format_option(*TABLE_FORMATS)
def plan(model, tp, ep, overrides, fmt):
    """Build every rank's shards on the meta device under a fake process group (one process,
    nothing allocated or sent) and check each rank's parameters and one decode step's
    collectives against the analytic plan (the one `archscope fit --tp/--ep` prices). The
    ranks are built one after another, ~30 ms a layer: --tp times the model's layers may be
    at most 1,024 (archscope/spec/limits.py; fit prices any split).

    \b
    Examples:
      archscope plan deepseek-v3 --tp 8 --ep 8
      archscope plan llama-3.1-8b --tp 8 --format json
      archscope plan llama-3.1-8b --tp 8 --format csv    # one row per rank

    Figures are exact: parameter counts and bytes (json, csv, and the tables for people).
    """
    from archscope.distributed.support import check_plan_size, check_supported
    from archscope.spec import load_spec

    spec = load_spec(model, overrides)
    check_plan_size(spec, tp)  # both before torch.distributed is imported: refused at once
    check_supported(spec, tp, ep)
    from archscope.progress import progress_bar

    # the bar is up before torch is imported (seconds); then each rank is built and stepped
    with progress_bar("plan", 1 + 2 * tp) as tick:
        from archscope.distributed.meta_plan import plan_ranks

        tick("torch imported")
        record = plan_ranks(spec, tp, ep, progress=tick)
    record["overrides"] = list(overrides)
    if fmt == "json":
        _echo_json(record)
    elif fmt == "csv":
        _echo_records(record["ranks"], fmt)
    else:
        click.echo(_ranks_text(record, ("params", "collective_bytes_per_step"), fmt), nl=False)
        click.echo(f"{'agrees' if record['agrees'] else 'DISAGREES'} with the plan on every "
                   f"rank ({record['seconds']:.1f} s)")
    if not record["agrees"]:
        raise click.exceptions.Exit(1)


def profile_sharded(spec, *, tp, ep, device, dtype, batch, prompt_len, new_tokens, seed,
                    weights, overrides, fmt) -> None:
    """`archscope profile --tp N [--ep N]`: refuse a bad split before any process starts
    (InputError, exit 2), launch the ranks, print their records beside the plan."""
    from archscope.distributed.support import check_supported
    from archscope.errors import InputError

    check_supported(spec, tp, ep)
    cpus = os.cpu_count() or 1
    if device == "cpu" and tp > CPU_RANKS_PER_CPU * cpus:  # a process, a model's copy each
        raise InputError(f"--tp {tp} on the CPU starts {tp} processes, one per rank; this "
                         f"machine has {cpus} CPUs, which run at most "
                         f"{CPU_RANKS_PER_CPU * cpus} ranks")
    import torch

    from archscope.devices import resolve_device
    from archscope.distributed.launch import RankFailed, launch
    from archscope.distributed.worker import Job, run_rank
    from archscope.measure.timing import to_torch_dtype

    if weights:  # every check that reads no tensor data, before any process starts
        from archscope.weights.loader import open_checkpoint

        open_checkpoint(weights, spec, to_torch_dtype(dtype))
    kind = resolve_device(device).type
    if kind == "cuda" and torch.cuda.device_count() < tp:
        raise InputError(f"--tp {tp} needs {tp} GPUs; {torch.cuda.device_count()} are visible")

    job = Job(spec, tp, ep, kind, to_torch_dtype(dtype), batch, prompt_len, new_tokens, seed,
              weights and str(weights))
    try:
        ranks = launch(run_rank, tp, job)
    except RankFailed as failed:
        raise click.ClickException(str(failed)) from None
    record = _record(spec, overrides, job, weights, ranks)
    if fmt == "json":
        _echo_json(record)
    elif fmt == "csv":
        _echo_records(ranks, fmt)
    else:
        from archscope.units import size

        click.echo(_ranks_text(record, ("weights_bytes", "kv_cache_bytes",
                                        "collective_bytes_per_step"), fmt), nl=False)
        click.echo(f"prefill {record['prefill_ms']:.1f} ms (slowest rank), decode "
                   f"{record['decode_tokens_per_s']} tokens/s; peak memory per rank "
                   f"{size(max(r['peak_memory_bytes'] or 0 for r in ranks), 'M')}")
        if weights:
            click.echo("checkpoint bytes read per rank: " + ", ".join(
                f"{r['checkpoint_bytes_read']:,}" for r in ranks))


def _record(spec, overrides, job, weights, ranks) -> dict:
    keys = ("weights_bytes", "weights_bytes_planned", "kv_cache_bytes", "kv_cache_bytes_planned",
            "peak_memory_bytes", "checkpoint_bytes_read")
    agree = all(r[k] == r[f"{k}_planned"] for r in ranks
                for k in ("params", "weights_bytes", "collective_bytes_per_step"))
    decode = [r["decode_tokens_per_s"] for r in ranks if r["decode_tokens_per_s"]]
    return {"model": spec.name, "overrides": list(overrides), "device": job.device,
            "backend": "nccl" if job.device == "cuda" else "gloo",
            "dtype": str(job.dtype).removeprefix("torch."), "tp": job.tp, "ep": job.ep,
            "weights": weights or "random-init", "batch": job.batch,
            "prompt_len": job.prompt_len, "new_tokens": job.new_tokens,
            "prefill_ms": max(r["prefill_ms"] for r in ranks),
            "decode_tokens_per_s": min(decode) if decode else None,
            "total": {k: sum(r[k] or 0 for r in ranks) for k in keys},
            "agrees": agree, "ranks": ranks}


def _ranks_text(record: dict, keys: tuple[str, ...], fmt: str = "text") -> str:
    """Each rank's figures, measured beside planned: aligned text or a markdown pipe table."""
    head = f"{record['model']}: --tp {record['tp']} --ep {record['ep']}\n"
    if fmt == "markdown":
        from archscope.tables import pipe_table

        cells = [["rank", "figure", "measured", "planned"]]
        cells += [[str(r["rank"]), k, f"{r[k]:,}", f"{r[k + '_planned']:,}"]
                  for r in record["ranks"] for k in keys]
        return f"{head}\n{pipe_table(cells)}\n\n"
    width = max(len(k) for k in keys)
    lines = [f"{'rank':>4}  {'figure':<{width}}  {'measured':>16}  {'planned':>16}"]
    for r in record["ranks"]:
        for k in keys:
            lines.append(f"{r['rank']:>4}  {k:<{width}}  {r[k]:>16,}  {r[k + '_planned']:>16,}")
    return head + "\n".join(lines) + "\n"
