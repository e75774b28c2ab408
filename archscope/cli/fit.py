"""`archscope fit`: will a model fit, how long a context, how many sequences, how fast."""

from __future__ import annotations

import click

from archscope.cli.group import cli
from archscope.cli.options import (KV_DTYPES, RANKS, SEQ_LEN, TABLE_FORMATS, Choice, Number,
                                   _echo_json, _echo_records, _set_option, batch_option, count,
                                   dtype_option, format_option, units_option,
                                   weight_format_option)
from archscope.spec.limits import GPUS_MAX

# The formats the catalog table shows when --weight-format does not pick one.
CATALOG_FORMATS = ("bf16", "fp8", "int4-g128", "nvfp4", "mxfp4", "q4_k_m")


def gpu_option(help: str):
    return click.option("--gpu", default=None, metavar="NAME", help=help)


@cli.command("fit")
@click.argument("model")
@gpu_option("A catalog part (`archscope hardware`) or cpu. Without it: the catalog table, "
            "which GPUs and how many hold the model in each format.")
@click.option("--n-gpus", type=count(1, GPUS_MAX), default=None,
              help="GPUs of that kind: --n-gpus / --tp replicas of a --tp group [default: "
                   "--tp, else 1].")
@weight_format_option("[default: the checkpoint's format (the spec's weight_format), else "
                      "bf16; the catalog table: the checkpoint's and a few common ones]")
@dtype_option(KV_DTYPES, name="--kv-dtype", what="the KV cache",
              default_help="[default: bf16 (fp16 / fp32 with those weights)]")
@click.option("--context", type=SEQ_LEN, default=None,
              help="Context length of every sequence [default: 8,192 or the model's maximum].")
@batch_option
@click.option("--gpu-memory-utilization", type=Number(0, 1, min_open=True),
              default=0.9, show_default=True,
              help="Fraction of each GPU's memory for weights and cache (vLLM's default); the "
                   "rest is the activation and workspace reserve.")
@click.option("--tp", type=RANKS, default=None,
              help="Tensor-parallel GPUs per replica [default: --n-gpus].")
@click.option("--ep", type=RANKS, default=1, show_default=True,
              help="Expert-parallel groups the routed experts are spread over (divides --tp).")
@click.option("--bandwidth-fraction", type=Number(0, 2, min_open=True), default=None,
              help="Achievable fraction of peak memory bandwidth [default: the cited figure "
                   "in archscope/hardware/achievable.yaml].")
@click.option("--compute-fraction", type=Number(0, 2, min_open=True), default=None,
              help="Achievable fraction of dense peak FLOP/s [default: as above].")
@click.option("--engine", type=Choice(["raw", "vllm"]), default="raw", show_default=True,
              help="Memory accounting: raw spends the whole utilization share on weights and "
                   "cache; vllm also keeps its profiling run's activation peak and the memory "
                   "outside torch there, as vLLM's log does.")
@click.option("--max-batched-tokens", type=SEQ_LEN, default=None,
              help="--engine vllm: tokens of its profiling forward [default: vLLM's, 8192 on "
                   "GPUs of 70 GiB or more but the A100, else 2048].")
@_set_option
@format_option(*TABLE_FORMATS)
@units_option
def fit_cmd(model, gpu, n_gpus, dtype, kv_dtype, context, batch, gpu_memory_utilization,
            tp, ep, bandwidth_fraction, compute_fraction, engine, max_batched_tokens, overrides,
            fmt):
    """Will MODEL fit on --gpu, with what context, how many concurrent sequences, and how fast
    (time to first token and per output token: a roofline at achievable fractions of peak, each
    format's kernels at their measured share of bf16's bandwidth, plus the gaps between kernels
    and each collective's latency; archscope/hardware/achievable.yaml cites every figure).

    Not modelled: speculative decoding, multi-token prediction (MTP), prefix caching,
    chunked-prefill interference between requests, and the engine's scheduling between steps.

    \b
    Examples:
      archscope fit llama-3.1-8b --gpu h100-sxm --context 8192
      archscope fit qwen3-30b-a3b --gpu h100-sxm --weight-format fp8 --batch 32
      archscope fit deepseek-v3 --gpu h200 --n-gpus 8 --weight-format fp8-block --ep 8
      archscope fit gpt-oss-120b                  # which GPUs hold it, in which format

    --format csv: the rows of --format json (one for --gpu, one per GPU and format for the
    catalog), nested keys dotted; sizes in bytes.
    """
    from archscope.spec import load_spec

    spec = load_spec(model, overrides)
    if gpu is None:
        _catalog(spec, dtype, context, fmt)
        return
    from archscope.api import fit

    result = fit(spec, gpu, n_gpus=n_gpus, tp=tp, ep=ep, weight_format=dtype,
                 kv_dtype=kv_dtype, context=context, batch=batch,
                 gpu_memory_utilization=gpu_memory_utilization,
                 bandwidth_fraction=bandwidth_fraction, compute_fraction=compute_fraction,
                 engine=engine, max_batched_tokens=max_batched_tokens)
    if fmt == "json":
        _echo_json(result.row())
    elif fmt == "csv":
        _echo_records([result.row()], fmt)
    else:
        from archscope.report.terminal.fit import fit_text

        from archscope.spec.weight_formats import checkpoint_format

        click.echo(fit_text(result, checkpoint_format(spec), markdown=fmt == "markdown"),
                   nl=False)


def _catalog(spec, weight_format, context, fmt) -> None:
    """Every catalog part x format: the fewest GPUs that hold the model at the context."""
    from archscope.estimate.fit import DEFAULT_CONTEXT, min_gpus
    from archscope.hardware import catalog

    from archscope.spec.weight_formats import checkpoint_format

    own = checkpoint_format(spec)
    formats = [weight_format] if weight_format else list(
        dict.fromkeys([own, *CATALOG_FORMATS]))
    context = context or min(DEFAULT_CONTEXT, spec.max_seq_len)
    cells = min_gpus(spec, list(catalog().values()), formats, context)
    if fmt in ("json", "csv"):
        _echo_records([{"model": spec.name, "gpu": g, "weight_format": f, "context": context,
                        "min_gpus": n} for (g, f), n in cells.items()], fmt)
    else:
        from archscope.report.terminal.fit import catalog_text

        click.echo(catalog_text(spec.name, context, formats, cells, fmt == "markdown"), nl=False)
