"""Options and helpers the commands share."""

from __future__ import annotations

import json

import click

from archscope.errors import InputError


def _set_option(f):
    return click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE",
        help="What-if override of a spec key, dotted for nested keys; repeatable. "
             "Example: --set attention.n_kv_heads=32 --set n_layers=2")(f)


def _echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2))


def _dtype_option(default: str | None, name: str = "--dtype",
                  help: str = "Number format: fp32, fp16, bf16, fp8, int8, int4."):
    def check(ctx, param, value):
        from archscope.estimate import canonical_dtype

        if value is None:
            return None
        try:
            return canonical_dtype(value)
        except InputError as err:
            raise click.BadParameter(str(err)) from None

    return click.option(name, default=default, show_default=default is not None,
                        callback=check, help=help)


def _estimate_options(f):
    """The conventions every analytic command shares (the record's, estimate/record.py)."""
    for option in reversed([
        click.option("--seq-len", type=click.IntRange(min=1), default=4096, show_default=True,
                     help="Context length for the KV cache, decode step and prefill."),
        click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True),
        _dtype_option("bf16", "--dtype", "Weight format: fp32, fp16, bf16, fp8, int8, int4."),
        _dtype_option(None, "--kv-dtype", "Cache dtype [default: the compute dtype: --dtype when "
                                          "16 bits or wider, else bf16]."),
        click.option("--attention-flops", type=click.Choice(["causal", "full"]),
                     default="causal", show_default=True,
                     help="Prefill attention FLOPs: the causal half, or the full square that "
                          "dense kernels and torch.utils.flop_counter count."),
        click.option("--mla-flops", type=click.Choice(["absorbed", "recompute", "naive"]),
                     default="absorbed", show_default=True,
                     help="MLA decode FLOPs: absorbed (serving kernels: attention on the cached "
                          "latent), recompute (re-expand every cached latent, as transformers "
                          "does), naive (a decompressed cache)."),
    ]):
        f = option(f)
    return f


def _record(spec, seq_len, batch, dtype, kv_dtype, attention_flops, mla_flops, lengths=()):
    from archscope.estimate import model_record

    return model_record(spec, (seq_len, *lengths), batch=batch, weight_dtype=dtype,
                        cache_dtype=kv_dtype, attention_flops=attention_flops,
                        mla_flops=mla_flops)
