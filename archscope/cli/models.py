"""`archscope list`, `show`, `compare` and `diff`: the analytic commands (no torch unless
--verify)."""

from __future__ import annotations

import sys

import click

from archscope.cli.group import cli
from archscope.cli.fit import gpu_option
from archscope.api import compare_rows, labelled_row, load_labelled
from archscope.errors import quote
from archscope.cli.options import (TABLE_FORMATS, _echo_json, _echo_records,
                                   _estimate_options, _record, _set_option, format_option,
                                   seq_len_option, units_option)
from archscope.report.terminal import compare as compare_view, compare_fit as compare_fit_view


def _names(columns) -> str:
    return ", ".join(c.name for c in columns)


def _columns_option(f):
    """--columns: which columns the table, markdown and CSV show; checked against --gpu in the
    command, as the fit columns exist only there."""
    def split(ctx, param, value):
        return None if value is None else tuple(n.strip().lower() for n in value.split(","))

    return click.option(
        "--columns", metavar="NAME,...", callback=split,
        help=f"Columns of the table, markdown and CSV (never JSON), the model first: a comma "
             f"list of {_names(compare_view.COLUMNS)}; with --gpu also "
             f"{_names(compare_fit_view.FIT_COLUMNS)}; or all.  [default: the table, a view "
             f"that fits 120 columns; markdown and CSV, all]")(f)


def _check_columns(names, gpu) -> None:
    """An unknown column name is a usage error listing the names (exit 2)."""
    if names is None:
        return
    known = compare_fit_view.COLUMNS if gpu else compare_view.COLUMNS
    fit_only = {c.name for c in compare_fit_view.FIT_COLUMNS}
    for name in names:
        if name not in {"all", *(c.name for c in known)}:
            hint = "a column of --gpu only" if name in fit_only else "no column"
            raise click.BadParameter(f"{quote(name)} is {hint}: one of {_names(known)}, or all",
                                     param_hint="'--columns'")


def _show_counted_by_transformers(model, refusal, fmt) -> None:
    """A config.json archscope refuses (or has no family for): its parameters, counted by
    transformers' own class on the meta device, and the refusal beside them; exit 2 when
    transformers cannot build it either (the refusal stands)."""
    from archscope.errors import SpecError
    from archscope.measure.transformers_count import count_with_transformers

    try:
        counted = count_with_transformers(model)
    except SpecError:
        raise refusal from None
    caveat = ("counted by transformers' own class on the meta device; archscope does not read "
              "this model, so no cache, FLOPs, state or memory are derived")
    out = {"model": str(model), "model_type": counted.model_type, "hf_class": counted.hf_class,
           "params_total": counted.params_total, "params_embedding": counted.params_embedding,
           "params_source": "transformers meta", "refused": str(refusal), "caveat": caveat}
    if fmt in ("json", "csv"):
        return _echo_records([out], fmt) if fmt == "csv" else _echo_json(out)
    if fmt == "markdown":
        from archscope.tables import pipe_table

        return click.echo(pipe_table([["key", "value"], *([k, str(v)] for k, v in out.items())]))
    click.echo(f"{model}\n  archscope does not read it: {refusal}\n\n"
               f"  {counted.hf_class}: {counted.params_total:,} parameters "
               f"({counted.params_embedding:,} in the embedding)\n  {caveat}.")


def _not_read(err) -> bool:
    """Whether a config.json's refusal is of its model type (no family reads it, or its family
    is declared only to refuse), where transformers' own count is the answer; a value a family
    refuses is bad input and stays an error (exit 2)."""
    from archscope.spec.families.registry import find
    from archscope.spec.hf_import import model_type_of

    if err.key == "model_type":
        return True
    family = find(model_type_of(err.where)) if err.where else None
    return family is not None and family.reads_nothing


@cli.command("list")
@format_option(*TABLE_FORMATS)
def list_cmd(fmt):
    """List the shipped presets, one line each (csv and json: exact parameter counts)."""
    from archscope.estimate.params import count_params
    from archscope.report.fmt import human
    from archscope.report.wording import attention
    from archscope.spec import load_spec, preset_names

    rows = []
    for name in preset_names():
        spec = load_spec(name)
        p = count_params(spec)
        rows.append({"model": name, "params_total": p.total, "params_active": p.active,
                     "n_layers": spec.n_layers, "d_model": spec.d_model,
                     "attention": attention(spec.attention)})
    if fmt in ("json", "csv"):
        return _echo_records(rows, fmt)
    if fmt == "markdown":
        from archscope.tables import pipe_table

        cells = [["model", "params", "active", "layers", "d_model", "attention"]]
        cells += [[r["model"], human(r["params_total"]), human(r["params_active"]),
                   str(r["n_layers"]), str(r["d_model"]), r["attention"]] for r in rows]
        return click.echo(pipe_table(cells))
    width = max(len(r["model"]) for r in rows)
    for r in rows:
        total, active = r["params_total"], r["params_active"]
        active = f" ({human(active)} active)" if active != total else ""
        click.echo(f"{r['model']:<{width}}  {human(total):>6}{active:<16}  {r['n_layers']:>3} "
                   f"layers, d_model {r['d_model']}, {r['attention']}")


@cli.command()
@click.argument("model")
@_set_option
@click.option("--verify", is_flag=True,
              help="Also build the model on the meta device, count its parameters and check "
                   "the module tables against it; exit 1 on any mismatch.")
@_estimate_options
@format_option(*TABLE_FORMATS)
@units_option
def show(model, overrides, verify, seq_len, batch, dtype, kv_dtype, attention_flops, mla_flops,
         fmt):
    """One model: its spec, per-layer structure, parameters, cache, FLOPs and memory.

    --format markdown: each table under a heading. --format csv: one row per context length
    the text view tabulates (2,048 up to the model's context, and --seq-len), with the keys of
    `compare --format json`'s row: sizes in bytes, counts exact.

    \b
    Examples:
      archscope show llama-3.2-1b
      archscope show llama-3.1-8b --dtype int4 --seq-len 32768
      archscope show mistral-7b-v0.1 --set attention.window=null --verify
      archscope show deepseek-v2 --format json
    """
    from archscope.errors import SpecError
    from archscope.report.costs import SHOW_LENGTHS, below_context, details_record
    from archscope.spec import load_spec
    from archscope.spec.fields import to_mapping
    from archscope.spec.loader import is_config_path

    try:
        spec = load_spec(model, overrides)
    except SpecError as err:
        if not (is_config_path(model) and not overrides and _not_read(err)):
            raise
        return _show_counted_by_transformers(model, err, fmt)
    lengths = sorted({*below_context(spec, SHOW_LENGTHS), seq_len})
    record = _record(spec, seq_len, batch, dtype, kv_dtype, attention_flops, mla_flops, lengths)
    details = details_record(spec, record, lengths)
    params = record.params
    counted, differences = None, []
    if verify:  # only here is torch imported: the tables below come from the spec
        from archscope.measure.counted import verify_structure

        counted, differences = verify_structure(spec)
    if fmt == "json":
        out = {"model": spec.name, "spec": to_mapping(spec), "params_total": params.total,
               "params_active": params.active, "params_embedding": params.embedding,
               "params_mtp": params.mtp,
               "record": labelled_row(record.row(seq_len), overrides), "details": details}
        if counted is not None:
            out["params_counted"] = counted
        _echo_json(out)
    elif fmt == "csv":
        rows = [labelled_row(record.row(n), overrides) for n in lengths]
        _echo_records([{**r, "params_counted": counted} if verify else r for r in rows], fmt)
    else:
        from archscope.estimate.structure import layer_module_rows
        from archscope.report.terminal.show import show_text

        click.echo(show_text(spec, record, layer_module_rows(spec), details, counted,
                             markdown=fmt == "markdown"), nl=False)
    if counted is not None and counted != params.total:
        click.echo(f"error: analytic parameter count {params.total:,} differs from the built "
                   f"module's {counted:,}", err=True)
    for line in differences:
        click.echo(f"error: module table of {spec.name}: {line}", err=True)
    if (counted is not None and counted != params.total) or differences:
        sys.exit(1)


@cli.command()
@click.argument("models", nargs=-1, metavar="[MODEL[:KEY=VALUE,...]]...")
@_estimate_options
@_set_option
@click.option("--verify", is_flag=True,
              help="Also count each model built on the meta device; exit 1 on any mismatch.")
@gpu_option("Also fit each model on one GPU of this name (`archscope hardware`): fits, "
            "weights per GPU, cache per sequence, concurrent sequences, TTFT, TPOT, tokens/s.")
@_columns_option
@units_option
@format_option("markdown", "csv", "json", default="table")
def compare(models, seq_len, batch, dtype, kv_dtype, attention_flops, mla_flops, overrides,
            verify, gpu, columns, fmt):
    """Models side by side: parameters, KV cache, FLOPs and weights, from their specs.

    With no MODEL, every preset. A MODEL may carry its own what-ifs, MODEL:KEY=VALUE[,...],
    applied after any --set (values holding a comma need --set); each row is labelled with
    the overrides it was made with. A seq_len past a model's context is computed anyway and
    flagged (`exceeds_context`).

    The table shows the columns a reader wants first and fits 120 columns; --columns picks
    others (--columns all: every one), for markdown and CSV too, which otherwise hold every
    column; JSON always holds every key. Sizes are in one unit family (--units).

    \b
    Examples:
      archscope compare
      archscope compare llama-3.1-8b qwen3-8b --columns params,kv,kv-per-token,prefill
      archscope compare llama-3.2-1b mistral-7b-v0.1 deepseek-v2 --seq-len 32768
      archscope compare llama-3.2-1b llama-3.2-1b:attention.n_kv_heads=32   # what GQA saves
      archscope compare deepseek-v2 --mla-flops recompute --format json
      archscope compare llama-3.1-8b qwen3-8b --gpu h100-sxm --seq-len 32768
    """
    _check_columns(columns, gpu)
    records = compare_rows(models or None, seq_len, batch=batch, dtype=dtype, kv_dtype=kv_dtype,
                           attention_flops=attention_flops, mla_flops=mla_flops,
                           overrides=overrides, gpu=gpu)
    if verify:
        from archscope.measure.counted import counted_params
        from archscope.spec import preset_names

        for arg, record in zip(models or preset_names(), records):
            record["params_counted"] = counted_params(load_labelled(arg, overrides)[0])
    if fmt == "json":
        _echo_json(records)
    else:
        render = (compare_fit_view if gpu else compare_view).render
        rows = [{k: v for k, v in r.items() if k != "overrides"} for r in records]  # in the label
        click.echo(render(rows, "table" if fmt == "text" else fmt, columns), nl=False)
    wrong = [r for r in records if verify and r["params_counted"] != r["params_total"]]
    for r in wrong:
        click.echo(f"error: {r['model']}: analytic parameters {r['params_total']:,} != counted "
                   f"{r['params_counted']:,}", err=True)
    if wrong:
        sys.exit(1)


@cli.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@_set_option
@seq_len_option
@format_option(*TABLE_FORMATS)
@units_option
def diff(a, b, overrides, seq_len, fmt):
    """Two models side by side: only what differs in their specs (dotted keys; the per-layer
    plans summarised), and what each difference costs applied alone to A (parameters, cache
    = KV + state at --seq-len, decode FLOPs), with the total A -> B. A and B are presets,
    YAML specs, config.json files or folders, or MODEL:KEY=VALUE[,...] what-ifs; --set
    applies to both.

    \b
    Examples:
      archscope diff llama-3.2-1b llama-3.2-3b
      archscope diff llama-3.2-1b llama-3.2-1b:attention.n_kv_heads=32 --seq-len 32768
      archscope diff mistral-7b-v0.1 path/to/config.json --format json

    --format csv: one row per differing key and the total, with the json keys (bytes).
    """
    from archscope.api import diff as spec_diff
    from archscope.estimate.diff import diff_dict

    d = spec_diff(a, b, seq_len, overrides=overrides)
    if fmt == "json":
        _echo_json(diff_dict(d))
    else:
        from archscope.report.terminal.diff import diff_csv, diff_markdown, diff_text

        render = {"markdown": diff_markdown, "csv": diff_csv}.get(fmt, diff_text)
        click.echo(render(d), nl=False)
