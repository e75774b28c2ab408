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
@click.option("--attention-flops", type=click.Choice(["causal", "full"]), default="causal",
              show_default=True,
              help="Prefill attention FLOPs: the causal half, or the full square that dense "
                   "kernels and torch.utils.flop_counter count.")
@click.option("--verify", is_flag=True,
              help="Also count each model built on the meta device; exit 1 on any mismatch.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]),
              default="table", show_default=True)
def compare(models, seq_len, batch, dtype, overrides, attention_flops, verify, fmt):
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
    records = [summary(spec, seq_len, batch, dtype, attention_flops) for spec in specs]
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


@cli.command()
@click.argument("model")
@click.option("--device", default="cpu", show_default=True, help="cpu, cuda or cuda:N.")
@click.option("--weights", "weights_dir", type=click.Path(), default=None,
              help="HF checkpoint folder (checked against MODEL); without it the weights are "
                   "random (random-init).")
@click.option("--dtype", type=click.Choice(["fp32", "fp16", "bf16"]), default=None,
              help="Weights, cache and compute dtype [default: fp32 on cpu, bf16 on cuda].")
@click.option("--batch", type=int, default=1, show_default=True)
@click.option("--prompt-len", type=int, default=128, show_default=True)
@click.option("--new-tokens", type=int, default=32, show_default=True,
              help="Tokens to generate; decode speed is timed over all but the first.")
@_set_option
@click.option("--compare-hf", is_flag=True,
              help="Also run transformers' own class (SDPA) on the same weights: its generate "
                   "speed and the max abs logit difference.")
@click.option("--hf-cache", type=click.Choice(["dynamic", "static"]), default="dynamic",
              show_default=True, help="transformers' cache for --compare-hf.")
@click.option("--repeats", type=int, default=3, show_default=True)
@click.option("--warmup", type=int, default=1, show_default=True)
@click.option("--compile", "compile_", is_flag=True,
              help="torch.compile the decode step (on CUDA also captured as a CUDA graph); "
                   "the eager step is run too, as a check.")
@click.option("--breakdown/--no-breakdown", default=None,
              help="Per-module and per-operator time of a decode step (torch.profiler) "
                   "[default: on for table, off for json].")
@click.option("--hardware", type=click.Choice(["auto", "local", "h200", "h100", "a100"]),
              default="auto", show_default=True,
              help="Roofline profile: auto = the GPU's preset if known, else measured here.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--save", is_flag=True, help="Write the JSON record under --save-dir.")
@click.option("--save-dir", type=click.Path(file_okay=False), default="reports/data",
              show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
              show_default=True)
def profile(model, device, weights_dir, dtype, batch, prompt_len, new_tokens, overrides,
            compare_hf, hf_cache, repeats, warmup, compile_, breakdown, hardware, seed, save,
            save_dir, fmt):
    """Run the built model: measured prefill and decode speed and memory, beside the roofline
    prediction, the estimators and (--compare-hf) transformers on the same weights.

    \b
    Examples:
      archscope profile llama-3.2-1b --set n_layers=2 --prompt-len 64 --new-tokens 16
      archscope profile llama-3.2-1b --set n_layers=2 --compare-hf --format json --save
      archscope profile llama-3.2-1b --device cuda --dtype bf16 --prompt-len 512 \\
          --new-tokens 256 --compare-hf --compile
    """
    from pathlib import Path

    from archscope.spec import load_spec

    spec = load_spec(model, overrides)
    from tqdm import tqdm

    from archscope.measure.profile import ProfileOptions, profile as run_profile, progress_units

    options = ProfileOptions(
        device=device, dtype=dtype or ("bf16" if device.startswith("cuda") else "fp32"),
        batch=batch, prompt_len=prompt_len, new_tokens=new_tokens, repeats=repeats,
        warmup=warmup, compare_hf=compare_hf, hf_cache=hf_cache, compile=compile_,
        breakdown=(fmt == "table") if breakdown is None else breakdown, hardware=hardware,
        seed=seed, weights=weights_dir)
    with tqdm(total=progress_units(options), desc="profile", unit="step", file=sys.stderr,
              leave=False, disable=None) as bar:
        record = run_profile(spec, options, progress=lambda label: (bar.set_postfix_str(label),
                                                                    bar.update()))
    if fmt == "json":
        _echo_json(record)
    else:
        from archscope.report.profile import profile_text

        click.echo(profile_text(record), nl=False)
    if save:
        name = "-".join(("profile", record["model"], record["device"].replace(":", ""),
                         record["dtype"])) + ".json"
        path = Path(save_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=2) + "\n")
        click.echo(f"saved {path}", err=True)


@cli.command("check-claims")
@click.argument("files", nargs=-1, type=click.Path(), metavar="FILE...")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]),
              default="table", show_default=True)
@click.option("--strict", is_flag=True, help="Exit 1 when any claim differs.")
@click.option("--quantities", "list_quantities", is_flag=True,
              help="List the quantities a claim can name, with their conditions, and exit.")
def check_claims(files, fmt, strict, list_quantities):
    """Recompute a document's claims (YAML files, or folders of them) and mark each agrees or
    differs, with the computed value and the likely cause of a difference. The file format
    is described in archscope/report/claims.py.

    \b
    Examples:
      archscope check-claims reports/claims/
      archscope check-claims my-claims.yaml --format markdown
      archscope check-claims --quantities
    """
    from archscope.report.claims import check_claim_files

    if list_quantities:
        from archscope.report.claims_render import quantities_text

        click.echo(quantities_text(), nl=False)
        return
    if not files:
        raise click.UsageError("give at least one claims file (or folder)")
    results = check_claim_files(files)
    if fmt == "json":
        from dataclasses import asdict

        _echo_json([asdict(r) for r in results])
    elif fmt == "markdown":
        from archscope.report.claims import claims_markdown

        click.echo(claims_markdown(results), nl=False)
    else:
        from archscope.report.claims_render import claims_text

        click.echo(claims_text(results), nl=False)
    if strict and any(r.verdict == "differs" for r in results):
        sys.exit(1)


@cli.command()
@click.option("--out", type=click.Path(file_okay=False), default="reports", show_default=True,
              help="Folder to write comparison.md, models/, figures/, profiles.md, data/.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Profile JSON files to tabulate [default: OUT/data].")
@click.option("--claims", "claims_dir", type=click.Path(file_okay=False), default=None,
              help="Claims YAML files to check into claims.md [default: OUT/claims].")
def report(out, data_dir, claims_dir):
    """Regenerate the markdown reports, figures and estimates.json of every preset.

    The output is deterministic (no timestamps): the same specs give the same bytes. Files are
    built in memory first and each is replaced atomically, so a failure leaves nothing
    half-written.

    \b
    Examples:
      archscope report
      archscope report --out /tmp/reports --data reports/data --claims reports/claims
    """
    import os
    from pathlib import Path

    from tqdm import tqdm

    from archscope.report.build import build_reports
    from archscope.report.profiles import load_profiles
    from archscope.spec import load_spec, preset_names

    out = Path(out)
    specs = [load_spec(name) for name in preset_names()]
    profiles = load_profiles(Path(data_dir) if data_dir else out / "data")
    claims = _claims_page(Path(claims_dir) if claims_dir else out / "claims")
    with tqdm(total=len(specs) + 2, desc="report", unit="step", file=sys.stderr, leave=False,
              disable=None) as bar:
        files = build_reports(specs, profiles, claims, progress=lambda _label: bar.update())
    for rel, body in files.items():
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(body)
        os.replace(tmp, path)  # atomic: a reader sees the old file or the new one
    click.echo(f"wrote {len(files)} files under {out}", err=True)


def _claims_page(folder) -> str | None:
    """claims.md from the claims files in `folder` (None when there are none).

    Hook: the claims check lives in archscope.report.claims (check_claim_files,
    claims_markdown); until both exist, the report is written without claims.md.
    """
    if not folder.is_dir() or not any(folder.glob("*.yaml")):
        return None
    try:
        from archscope.report.claims import check_claim_files, claims_markdown
    except ImportError as err:
        click.echo(f"warning: claims.md skipped ({err})", err=True)
        return None
    return claims_markdown(check_claim_files([folder]))


_RUN_DTYPES = click.Choice(["fp32", "fp16", "bf16"])


@cli.command()
@click.argument("prompt")
@click.option("--weights", "weights_dir", required=True, type=click.Path(),
              help="HF checkpoint folder (config.json, safetensors, tokenizer); read locally.")
@click.option("--model", default=None,
              help="Preset or spec the checkpoint must match (default: its own config.json).")
@click.option("--device", default="cpu", show_default=True, help="cpu, cuda or cuda:N.")
@click.option("--device-map", type=click.Choice(["auto", "balanced", "sequential"]),
              default=None, help="Spread the model over the GPUs, offloading to CPU memory "
                                 "what does not fit (accelerate); overrides --device.")
@click.option("--dtype", type=_RUN_DTYPES, default=None,
              help="Compute dtype [default: fp32 on cpu, bf16 on cuda].")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=64, show_default=True)
@click.option("--temperature", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="0 is greedy; above 0 samples.")
@click.option("--top-k", type=click.IntRange(min=1), default=None, help="Sample from the k most "
                                                                       "likely tokens.")
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="Sample from the most likely tokens that reach probability p.")
@click.option("--seed", type=int, default=None, help="Seed for sampling (reproducible text).")
@click.option("--chat", is_flag=True, help="Wrap the prompt in the tokenizer's chat template "
                                           "(for -Instruct checkpoints).")
@click.option("--system", default=None, help="A system message (with --chat).")
@click.option("--allow-pickle", is_flag=True,
              help="Also read .bin/.pt pickles (torch.load with weights_only=True).")
@click.option("--stats/--no-stats", default=True, show_default=True,
              help="Load time and tokens/s on stderr.")
def generate(prompt, weights_dir, model, device, device_map, dtype, max_new_tokens, temperature,
             top_k, top_p, seed, chat, system, allow_pickle, stats):
    """Generate text from a checkpoint folder with archscope's own model, printing tokens as
    they come; stops at any end-of-sequence id of the checkpoint.

    \b
    Examples:
      archscope generate --weights ~/models/Llama-3.2-1B "The capital of France is"
      archscope generate --weights ~/models/Llama-3.2-1B-Instruct --chat --device cuda \\
          "Explain grouped-query attention in two sentences."
      archscope generate --weights DIR --temperature 0.8 --top-p 0.95 --seed 1 "Once upon"
    """
    from archscope.measure.sampling import make_sampler
    from archscope.measure.textgen import open_generation
    from archscope.measure.timing import to_torch_dtype
    from archscope.spec import load_spec

    if system is not None and not chat:
        raise click.UsageError("--system needs --chat")
    on_gpu = device.startswith("cuda") or device_map is not None
    stream, text, info = open_generation(
        weights_dir, prompt, spec=load_spec(model) if model else None, device=device,
        dtype=to_torch_dtype(dtype or ("bf16" if on_gpu else "fp32")), device_map=device_map,
        chat=chat, system=system, max_new_tokens=max_new_tokens,
        next_token=make_sampler(temperature, top_k, top_p, seed), allow_pickle=allow_pickle)
    for token in stream:
        click.echo(text.push(token), nl=False)
        sys.stdout.flush()
    click.echo(text.flush())
    sys.stdout.flush()  # the text ends before the stats line on a shared terminal
    if stats:
        rate = stream.decode_tokens_per_s
        click.echo(f"[{info['spec'].name} on {info['device']} ({info['dtype']}): loaded in "
                   f"{info['load_s']:.2f} s; prompt {info['prompt_tokens']} tokens, "
                   f"{len(stream.tokens)} new in {stream.first_token_s + stream.decode_s:.2f} s"
                   f"{f', {rate:.1f} tokens/s after the first' if rate else ''}; "
                   f"stopped: {stream.stop_reason}]", err=True)


@cli.command("make-checkpoint")
@click.argument("model")
@click.argument("folder", type=click.Path())
@_set_option
@click.option("--dtype", type=_RUN_DTYPES, default="bf16", show_default=True)
@click.option("--shard-size", default="5GB", show_default=True,
              help="Largest safetensors file (e.g. 2GB, 500MB, 1GiB); more makes shards.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--device", default="cpu", show_default=True,
              help="Where the random weights are drawn (cuda is faster for large models).")
@click.option("--force", is_flag=True, help="Replace the contents of a non-empty FOLDER.")
def make_checkpoint(model, folder, overrides, dtype, shard_size, seed, device, force):
    """Write a random-init HF-format checkpoint of MODEL into FOLDER: config.json, safetensors
    shards, generation_config.json and a small tokenizer (trained here) with a chat template.
    Nothing is downloaded; FOLDER then works with generate, profile --weights and show.

    \b
    Examples:
      archscope make-checkpoint llama-3.2-1b /tmp/llama --set n_layers=2
      archscope generate --weights /tmp/llama --device cpu "Hello"
      archscope make-checkpoint gpt2 /tmp/gpt2 --shard-size 100MB --dtype fp32
    """
    from archscope.measure.timing import to_torch_dtype
    from archscope.spec import load_spec
    from archscope.weights.writer import parse_size, write_checkpoint

    spec = load_spec(model, overrides)
    summary = write_checkpoint(spec, folder, dtype=to_torch_dtype(dtype), seed=seed,
                               shard_size=parse_size(shard_size), device=device, force=force)
    click.echo(f"wrote {summary['folder']}: {spec.name} as {summary['model_type']}, "
               f"{summary['tensors']} tensors in {len(summary['files'])} file(s), "
               f"{summary['bytes'] / 1e9:,.3f} GB ({dtype}); tokenizer with "
               f"{summary['tokenizer_vocab']} ids (random weights: the text will be noise)")


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
