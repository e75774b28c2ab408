"""The `archscope` command line: parses, calls the library, renders. Nothing else lives here.

Exit codes: 0 success, 2 usage or bad input (one-paragraph message, no traceback), 1 anything
unexpected.
"""

from __future__ import annotations

import json
import sys

import click

from archscope.errors import InputError

EXIT_BAD_INPUT = 2


def _set_option(f):
    return click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE",
        help="What-if override of a spec key, dotted for nested keys; repeatable. "
             "Example: --set attention.n_kv_heads=32 --set n_layers=2")(f)


def _echo_json(obj) -> None:
    click.echo(json.dumps(obj, indent=2))


def _dtype_option(default: str):
    def check(ctx, param, value):
        from archscope.estimate import canonical_dtype

        try:
            return canonical_dtype(value)
        except InputError as err:
            raise click.BadParameter(str(err)) from None

    return click.option("--dtype", default=default, show_default=True, callback=check,
                        help="Number format: fp32, fp16, bf16, fp8, int8, int4.")


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="archscope")
def cli():
    """Analyse and compare decoder-only LLM architectures.

    MODEL is a preset name (see `archscope list`), a YAML spec file, or an HF config.json
    (or the folder holding it).

    \b
    Examples:
      archscope list
      archscope show llama-3.2-1b --verify
      archscope show path/to/config.json --format json
    """


@cli.command("list")
def list_cmd():
    """List the shipped presets, one line each."""
    from archscope.estimate.params import count_params
    from archscope.report.describe import attention
    from archscope.report.fmt import human
    from archscope.spec import load_spec, preset_names

    names = preset_names()
    width = max(map(len, names))
    for name in names:
        spec = load_spec(name)
        p = count_params(spec)
        active = f" ({human(p.active)} active)" if p.active != p.total else ""
        click.echo(f"{name:<{width}}  {human(p.total):>6}{active:<16}  {spec.n_layers:>3} layers, "
                   f"d_model {spec.d_model}, {attention(spec.attention)}")


@cli.command()
@click.argument("model")
@_set_option
@click.option("--verify", is_flag=True,
              help="Also build the model on the meta device and count its parameters.")
@_dtype_option("bf16")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
def show(model, overrides, verify, dtype, fmt):
    """One model: its spec, per-layer structure and parameter totals.

    \b
    Examples:
      archscope show llama-3.2-1b
      archscope show mistral-7b-v0.1 --set attention.window=null --verify
      archscope show deepseek-v2 --format json
    """
    from archscope.estimate.params import count_params
    from archscope.spec import load_spec
    from archscope.spec.fields import to_mapping

    from archscope.report.details import model_details

    spec = load_spec(model, overrides)
    params = count_params(spec)
    details = model_details(spec, dtype)
    counted = None
    if verify or fmt == "text":
        from archscope.measure.counted import counted_params, layer_module_rows
    if verify:
        counted = counted_params(spec)
    if fmt == "json":
        out = {"model": spec.name, "spec": to_mapping(spec), "params_total": params.total,
               "params_active": params.active, "params_embedding": params.embedding,
               "details": details}
        if counted is not None:
            out["params_counted"] = counted
        _echo_json(out)
    else:
        from archscope.report.show import show_text

        click.echo(show_text(spec, params, layer_module_rows(spec), details, counted), nl=False)
    if counted is not None and counted != params.total:
        click.echo(f"error: analytic parameter count {params.total:,} differs from the built "
                   f"module's {counted:,}", err=True)
        sys.exit(1)


@cli.command()
@click.argument("models", nargs=-1, metavar="[MODEL]...")
@click.option("--seq-len", type=click.IntRange(min=1), default=4096, show_default=True,
              help="Context length for the KV cache, decode step and prefill.")
@click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True)
@_dtype_option("bf16")
@_set_option
@click.option("--verify", is_flag=True,
              help="Also count each model built on the meta device; exit 1 on any mismatch.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]),
              default="table", show_default=True)
def compare(models, seq_len, batch, dtype, overrides, verify, fmt):
    """Models side by side: parameters, KV cache, FLOPs and weights, from their specs.

    With no MODEL, every preset. A seq_len past a model's context is computed anyway and
    flagged (`exceeds_context`).

    \b
    Examples:
      archscope compare
      archscope compare llama-3.2-1b mistral-7b-v0.1 deepseek-v2 --seq-len 32768
      archscope compare llama-3.2-1b --set attention.n_kv_heads=32   # what GQA saves
      archscope compare --format json --seq-len 4096 --dtype bf16
    """
    from archscope.estimate import summary
    from archscope.spec import load_spec, preset_names

    specs = [load_spec(m, overrides) for m in (models or preset_names())]
    records = [summary(spec, seq_len, batch, dtype) for spec in specs]
    if verify:
        from archscope.measure.counted import counted_params

        for spec, record in zip(specs, records):
            record["params_counted"] = counted_params(spec)
    if fmt == "json":
        _echo_json(records)
    else:
        from archscope.report.compare import render

        click.echo(render(records, fmt), nl=False)
    wrong = [r for r in records if verify and r["params_counted"] != r["params_total"]]
    for r in wrong:
        click.echo(f"error: {r['model']}: analytic parameters {r['params_total']:,} != counted "
                   f"{r['params_counted']:,}", err=True)
    if wrong:
        sys.exit(1)


def main(argv=None) -> None:
    """Console entry point: bad input exits 2 with its message, never a traceback."""
    try:
        cli.main(args=argv, prog_name="archscope", standalone_mode=False)
    except InputError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)


if __name__ == "__main__":
    main()
