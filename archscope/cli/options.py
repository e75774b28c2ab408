"""Options and helpers the commands share: one factory per option, so one name, one set of
values and one help wording for the same thing in every command (README: "Options shared by
all commands"; tests/cli/test_vocabulary.py checks the two agree)."""

from __future__ import annotations

import json
import math

import click

from archscope.errors import InputError, quote, shorten
from archscope.spec import limits

# What each family of commands takes: the analytic commands price the weights in any weight
# format (spec/weight_formats.py) and the KV cache in any of KV_DTYPES; the commands that run a
# network run (or write) real torch tensors.
KV_DTYPES = ("fp32", "fp16", "bf16", "fp8", "int8", "int4")
RUN_DTYPES = ("fp32", "fp16", "bf16")
CHECKPOINT_DEFAULT = "[default: the checkpoint's format (the spec's weight_format), else bf16]"


def _or(values) -> str:
    values = list(values)
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


class _Short:
    """Bounded click types that quote a hostile value shortly (a 5,000-digit number would
    otherwise be printed whole, or refused by int() with Python's own words)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and len(value.strip()) > 40:
            self.fail(f"{quote(value)} is not a number in the range {self._describe_range()}.",
                      param, ctx)
        return super().convert(value, param, ctx)


class Choice(click.Choice):
    """click.Choice, quoting a hostile value shortly (click prints it whole)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and len(value) > 40:
            self.fail(f"{quote(value)} is not one of {', '.join(map(repr, self.choices))}.",
                      param, ctx)
        return super().convert(value, param, ctx)


class Count(_Short, click.IntRange):
    """An integer within limits the help shows (`--batch INTEGER RANGE [1<=x<=1048576]`)."""


class Number(_Short, click.FloatRange):
    """A finite number within limits the help shows; nan and inf are refused (a range check
    alone lets nan through: every comparison with it is false)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{quote(value)} is not a finite number.", param, ctx)
        return number


def count(low: int, high: int) -> Count:
    return Count(low, high)


SEQ_LEN = count(1, limits.CONTEXT_MAX)  # tokens of context (archscope/spec/limits.py)
BATCH = count(1, limits.BATCH_MAX)
RANKS = count(1, limits.RANKS_MAX)
SEED = count(0, limits.SEED_MAX)


def seq_len_option(f):
    return click.option("--seq-len", type=SEQ_LEN, default=4096, show_default=True,
                        help="Context length for the KV cache, decode step and prefill.")(f)


def seed_option(default: int | None, help: str | None = None):
    return click.option("--seed", type=SEED, default=default, show_default=default is not None,
                        help=help or "Seed of the random weights (and of sampling).")


def _set_option(f):
    return click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE",
        help="What-if override of a spec key, dotted for nested keys; repeatable. "
             "Example: --set attention.n_kv_heads=32 --set n_layers=2")(f)


def _echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2))


def _echo_records(records: list[dict], fmt: str) -> None:
    """json: the records as they are; csv: one row each, nested keys dotted (tables.flat)."""
    if fmt == "json":
        return _echo_json(records)
    from archscope.tables import records_csv

    click.echo(records_csv(records), nl=False)


# --format of every command that prints a table (README: "Output formats")
TABLE_FORMATS = ("json", "markdown", "csv")


def format_option(*machine: str, default: str = "text"):
    """--format: `text` and `table` are the same view for people (the callback gives "text");
    `machine` lists the machine-readable formats this command has (json, markdown, csv)."""
    def check(ctx, param, value):
        return "text" if value == "table" else value

    return click.option("--format", "fmt", type=Choice(["text", "table", *machine]),
                        default=default, show_default=True, callback=check,
                        help=f"Output: text or table (the same, for people), "
                             f"{_or(machine)}.")


def units_option(f):
    """--units: the byte family every size for people is printed in (archscope/units.py)."""
    def use(ctx, param, value):
        from archscope.units import set_byte_units

        set_byte_units(value)
        return value

    # the metavar spells the units as people write them (click lowercases a case-blind choice)
    return click.option("--units", type=Choice(["GB", "GiB"], case_sensitive=False),
                        metavar="[GB|GiB]", default="GB", show_default=True,
                        expose_value=False, callback=use,
                        is_eager=True,
                        help="Byte units for people: GB (10^9 bytes) or GiB (2^30); JSON "
                             "keeps bytes.")(f)


def weight_format_option(default_help: str = CHECKPOINT_DEFAULT):
    """--dtype and --weight-format, one option under both names in every analytic command: the
    weights' format, any name of spec/weight_formats.py (aliases too), priced by
    estimate/formats.py. None: the command's default (`default_help` says which)."""
    def check(ctx, param, value):
        from archscope.spec.weight_formats import UnknownFormatError, canonical_format

        if value is None:
            return None
        try:
            return canonical_format(value)
        except UnknownFormatError as err:
            raise click.BadParameter(shorten(str(err), 400)) from None

    return click.option("--dtype", "--weight-format", "dtype", default=None, callback=check,
                        metavar="FORMAT",
                        help="Weight format: bf16, fp16, fp32, fp8, fp8-block, int8, int4 "
                             "(= int4-g128), nvfp4, mxfp4, mxfp4-experts, ternary, q8_0, q6_k, "
                             f"q5_k_m, q4_k_m; scales included {default_help}.")


def dtype_option(allowed: tuple[str, ...] = KV_DTYPES, *, what: str = "the weights",
                 default: str | None = None, default_help: str | None = None,
                 name: str = "--dtype"):
    """A number-format option: any name `canonical_dtype` knows (bfloat16, half, ...) is read as
    its short form; a format outside `allowed` is refused saying what this command takes."""
    verb = "runs" if allowed == RUN_DTYPES else "takes"

    def check(ctx, param, value):
        from archscope.estimate import canonical_dtype

        if value is None:
            return None
        try:
            dtype = canonical_dtype(value)
        except InputError:
            raise click.BadParameter(f"unknown dtype {quote(value)}: {ctx.info_name} {verb} "
                                     f"{_or(allowed)}") from None
        if dtype not in allowed:
            noun = " weights" if verb == "runs" else ""
            raise click.BadParameter(f"dtype {dtype}: {ctx.info_name} {verb} "
                                     f"{_or(allowed)}{noun}")
        return dtype

    shown = default_help or (default and f"[default: {default}]")
    return click.option(name, default=default, callback=check,
                        metavar=f"[{'|'.join(allowed)}]",
                        help=f"Number format of {what}{' ' + shown if shown else ''}.")


def new_tokens_option(default: int, help: str):
    return click.option("--new-tokens", type=SEQ_LEN, default=default, show_default=True,
                        help=help)


def batch_option(f):
    return click.option("--batch", type=BATCH, default=1, show_default=True,
                        help="Sequences processed together.")(f)


def device_option(help: str = "cpu, cuda or cuda:N."):
    return click.option("--device", default="cpu", show_default=True, help=help)


def weights_option(help: str, required: bool = False):
    # No explicit default when required: click takes an explicit None as a given value.
    default = {} if required else {"default": None}
    return click.option("--weights", "weights_dir", type=click.Path(), required=required,
                        metavar="DIR", help=help, **default)


def mla_flops_option(choices: tuple[str, ...], help: str):
    return click.option("--mla-flops", type=Choice(list(choices)), default="absorbed",
                        show_default=True, help=help)


def _estimate_options(f):
    """The conventions every analytic command shares (the record's, estimate/record.py)."""
    for option in reversed([
        seq_len_option,
        batch_option,
        weight_format_option(),
        dtype_option(KV_DTYPES, name="--kv-dtype", what="the KV cache",
                     default_help="[default: the compute dtype: fp16 or fp32 with those "
                                  "weights, else bf16]"),
        click.option("--attention-flops", type=Choice(["causal", "full"]),
                     default="causal", show_default=True,
                     help="Prefill attention FLOPs: the causal half, or the full square that "
                          "dense kernels and torch.utils.flop_counter count."),
        mla_flops_option(("absorbed", "recompute", "naive"),
                         "MLA decode FLOPs: absorbed (serving kernels: attention on the cached "
                         "latent), recompute (re-expand every cached latent, as transformers "
                         "does), naive (a decompressed cache)."),
    ]):
        f = option(f)
    return f


def _record(spec, seq_len, batch, dtype, kv_dtype, attention_flops, mla_flops, lengths=()):
    """The record at the options' conventions; weights in `dtype`, else the checkpoint's."""
    from archscope.estimate import model_record
    from archscope.spec.weight_formats import checkpoint_format

    return model_record(spec, (seq_len, *lengths), batch=batch,
                        weight_format=dtype or checkpoint_format(spec),
                        cache_dtype=kv_dtype, attention_flops=attention_flops,
                        mla_flops=mla_flops)

