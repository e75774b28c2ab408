"""`archscope profile`, `generate` and `make-checkpoint`: the commands that run a network."""

from __future__ import annotations

import json
import sys

import click

from archscope.cli.group import cli
from archscope.cli.sharded import profile_sharded, split_options
from archscope.cli.options import (RUN_DTYPES, SEQ_LEN, TABLE_FORMATS, Choice, Number,
                                   _echo_json, _echo_records, _set_option, batch_option, count,
                                   device_option, dtype_option, format_option, mla_flops_option,
                                   new_tokens_option, seed_option, units_option, weights_option)
from archscope.errors import shorten
from archscope.spec import limits

_RUN_DTYPE_DEFAULT = "[default: fp32 on cpu, bf16 on cuda; bf16 with --weight-format]"


def weight_format_option(f):
    """--weight-format: quantized linears (archscope.measure.quantize); checked by the library,
    which names the formats that run when given another."""
    return click.option(
        "--weight-format", default=None, metavar="FORMAT",
        help="Run the decoder's linear layers weight-only quantized with torch's packed "
             "kernels: int8 (one scale per output channel) or int4 (= int4-g128: scale and "
             "zero per 128 inputs). Embeddings, lm_head, norms and router stay bf16, as the "
             "format's estimate says; the model runs in bf16.")(f)


def _hardware_name(ctx, param, value: str) -> str:
    """--hardware: auto, local, or a catalog part (checked before anything is built)."""
    if value in ("auto", "local", "cpu"):  # cpu: the catalog's name for this machine, measured
        return "local" if value == "cpu" else value
    from archscope.hardware import UnknownHardwareError, catalog_part

    try:
        return catalog_part(value).name
    except UnknownHardwareError as err:
        raise click.BadParameter(f"{shorten(str(err), 300)} (or auto, local)") from None


def _run_dtype(dtype, device: str, weight_format) -> str:
    return dtype or ("bf16" if device.startswith("cuda") or weight_format else "fp32")


@cli.command()
@click.argument("model")
@device_option()
@weights_option("HF checkpoint folder to read (checked against MODEL); without it the weights "
                "are random (random-init).")
@dtype_option(RUN_DTYPES, what="the weights, cache and compute", default_help=_RUN_DTYPE_DEFAULT)
@batch_option
@click.option("--prompt-len", type=SEQ_LEN, default=128, show_default=True)
@new_tokens_option(32, "Tokens to generate; decode speed is timed over all but the first.")
@_set_option
@click.option("--compare-hf", is_flag=True,
              help="Also run transformers' own class (SDPA) on the same weights, stepped "
                   "through its own cache and timed as archscope is (runs interleaved, "
                   "per-pair ratios), and the max abs logit difference. (MLA: transformers "
                   "re-expands the latent every step; --mla-flops recompute runs the same "
                   "algorithm.)")
@click.option("--hf-cache", type=Choice(["dynamic", "static"]), default="dynamic",
              show_default=True, help="transformers' cache for --compare-hf.")
@click.option("--repeats", type=count(1, limits.REPEATS_MAX), default=3, show_default=True,
              help="Timed runs; the figures are their medians.")
@click.option("--warmup", type=count(1, limits.WARMUP_MAX), default=1, show_default=True,
              help="Untimed runs before them.")
@click.option("--compile/--no-compile", "compile_", default=None,
              help="torch.compile the decode step, q/k/v and gate/up fused (on CUDA also "
                   "captured as a CUDA graph); the eager step is run too, as a check "
                   "[default: on for CUDA without --weight-format, off for the CPU].")
@click.option("--pack-weights", is_flag=True,
              help="bf16 on the CPU (eager or --compile): run the linears on copies of "
                   "their weights in oneDNN's blocked layout (faster matrix-vector products; "
                   "costs the packed weights' bytes once more, checked before packing).")
@click.option("--breakdown/--no-breakdown", default=None,
              help="Per-module and per-operator time of a decode step (torch.profiler) "
                   "[default: on for text (table) and markdown, off for json and csv].")
@mla_flops_option(("absorbed", "recompute"),
                  "How MLA layers decode: absorbed (attention on the cached latent) or "
                  "recompute (re-expand every cached latent, as transformers does); the "
                  "roofline counts the same.")
@click.option("--hardware", default="auto", show_default=True, callback=_hardware_name,
              help="Roofline profile: a catalog part (`archscope hardware`: h100-sxm, h200, "
                   "...), local = this machine's kernels measured here, auto = the GPU's "
                   "catalog part if known, else local.")
@seed_option(0, "Seed of the random weights and inputs.")
@weight_format_option
@click.option("--save", is_flag=True, help="Write the JSON record under --save-dir (checked "
                                           "before the run).")
@click.option("--save-dir", type=click.Path(), default="reports/data", show_default=True)
@split_options
@format_option(*TABLE_FORMATS, default="table")
@units_option
def profile(model, device, weights_dir, dtype, batch, prompt_len, new_tokens, overrides,
            mla_flops, compare_hf, hf_cache, repeats, warmup, compile_, pack_weights, breakdown,
            hardware, seed, weight_format, save, save_dir, tp, ep, fmt):
    """Run the built model: measured prefill and decode speed and memory, beside the roofline
    prediction, the estimators and (--compare-hf) transformers on the same weights.

    \b
    Examples:
      archscope profile llama-3.2-1b --set n_layers=2 --prompt-len 64 --new-tokens 16
      archscope profile llama-3.2-1b --set n_layers=2 --compare-hf --format json --save
      archscope profile llama-3.2-1b --device cuda --dtype bf16 --prompt-len 512 \\
          --new-tokens 256 --compare-hf --compile
      archscope profile llama-3.2-1b --set n_layers=2 --tp 2 --device cpu --format json
      archscope profile llama-3.2-1b --set n_layers=2 --weight-format int4 --format json

    With --tp/--ep the model runs split over that many processes (torch.distributed: gloo on
    cpu, NCCL on cuda), each rank's figures beside the analytic plan's; with --weights each
    rank reads only its own slices of the safetensors files. --format csv: the json record as
    one row, nested keys dotted (with --tp/--ep: one row per rank); sizes in bytes.
    """
    from archscope.spec import load_spec
    from archscope.writes import check_destination, write_file_atomic

    if save:
        save_dir = check_destination(save_dir, "--save-dir folder")  # before the run
    spec = load_spec(model, overrides)
    if tp > 1 or ep > 1:
        if compare_hf or compile_ or save or weight_format or pack_weights:
            raise click.UsageError("--tp/--ep runs take none of --compare-hf, --compile, --save, "
                                   "--weight-format, --pack-weights")
        return profile_sharded(spec, tp=tp, ep=ep, device=device, dtype=dtype or (
            "bf16" if device.startswith("cuda") else "fp32"), batch=batch,
            prompt_len=prompt_len, new_tokens=new_tokens, seed=seed, weights=weights_dir,
            overrides=overrides, fmt=fmt)
    from archscope.progress import progress_bar
    from archscope.measure.preflight import progress_units
    from archscope.measure.profile import ProfileOptions, profile as run_profile
    from archscope.measure.timing import to_torch_dtype

    options = ProfileOptions(
        device=device, dtype=_run_dtype(dtype, device, weight_format),
        batch=batch, prompt_len=prompt_len, new_tokens=new_tokens, repeats=repeats,
        warmup=warmup, compare_hf=compare_hf, hf_cache=hf_cache, compile=compile_,
        breakdown=fmt in ("text", "markdown") if breakdown is None else breakdown,
        hardware=hardware,
        seed=seed, weights=weights_dir, overrides=tuple(overrides), mla_flops=mla_flops,
        weight_format=weight_format, pack_weights=pack_weights)
    if weights_dir:  # every check that reads no tensor data, before kernels are timed
        from archscope.weights.loader import open_checkpoint

        open_checkpoint(weights_dir, spec, to_torch_dtype(options.dtype))
    with progress_bar("profile", progress_units(spec, options)) as tick:
        record = run_profile(spec, options, progress=tick)
    if fmt in ("json", "csv"):  # csv: the record as one row (tables.flat)
        _echo_records([record], fmt) if fmt == "csv" else _echo_json(record)
    else:
        from archscope.report.terminal.profile import profile_text

        click.echo(profile_text(record, markdown=fmt == "markdown"), nl=False)
    if save:
        from archscope.report.pages.profiles import profile_file_name

        path = write_file_atomic(save_dir / profile_file_name(record),
                                 json.dumps(record, indent=2) + "\n", what="profile record")
        click.echo(f"saved {path}", err=True)


@cli.command()
@click.argument("prompt")
@weights_option("HF checkpoint folder to read (config.json, safetensors, tokenizer); read "
                "locally.", required=True)
@click.option("--model", default=None,
              help="Preset or spec the checkpoint must match (default: its own config.json).")
@device_option()
@click.option("--device-map", type=Choice(["auto", "balanced", "sequential"]),
              default=None, help="Spread the model over the CUDA GPUs, offloading to CPU memory "
                                 "what does not fit (accelerate); overrides --device.")
@dtype_option(RUN_DTYPES, what="the weights, cache and compute", default_help=_RUN_DTYPE_DEFAULT)
@new_tokens_option(64, "Tokens to generate at most; generation stops earlier at an "
                       "end-of-sequence id of the checkpoint.")
@click.option("--temperature", type=Number(0, limits.TEMPERATURE_MAX), default=0.0,
              show_default=True,
              help="0 is greedy; above 0 samples.")
@click.option("--top-k", type=count(1, limits.TOP_K_MAX), default=None,
              help="Sample from the k most likely tokens.")
@click.option("--top-p", type=Number(0, 1, min_open=True), default=None,
              help="Sample from the most likely tokens that reach probability p.")
@seed_option(None, "Seed for sampling (reproducible text).")
@click.option("--chat", is_flag=True, help="Wrap the prompt in the tokenizer's chat template "
                                           "(for -Instruct checkpoints).")
@click.option("--system", default=None, help="A system message (with --chat).")
@click.option("--allow-pickle", is_flag=True,
              help="Also read .bin/.pt pickles (torch.load with weights_only=True).")
@click.option("--stats/--no-stats", default=True, show_default=True,
              help="Load time and tokens/s on stderr.")
@weight_format_option
def generate(prompt, weights_dir, model, device, device_map, dtype, new_tokens, temperature,
             top_k, top_p, seed, chat, system, allow_pickle, stats, weight_format):
    """Generate text from a checkpoint folder with archscope's own model, printing tokens as
    they come: at most --new-tokens, fewer when the model emits any end-of-sequence id of the
    checkpoint.

    \b
    Examples:
      archscope generate --weights ~/models/Llama-3.2-1B "The capital of France is"
      archscope generate --weights ~/models/Llama-3.2-1B-Instruct --chat --device cuda \\
          "Explain grouped-query attention in two sentences."
      archscope generate --weights DIR --temperature 0.8 --top-p 0.95 --seed 1 "Once upon"
      archscope generate --weights ~/models/Llama-3.2-1B --weight-format int8 "The capital of"
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
        dtype=to_torch_dtype(_run_dtype(dtype, "cuda" if on_gpu else device, weight_format)),
        device_map=device_map, chat=chat, system=system, max_new_tokens=new_tokens,
        next_token=make_sampler(temperature, top_k, top_p, seed), allow_pickle=allow_pickle,
        weight_format=weight_format)
    for token in stream:
        click.echo(text.push(token), nl=False)
        sys.stdout.flush()
    click.echo(text.flush())
    sys.stdout.flush()  # the text ends before the stats line on a shared terminal
    context = info["spec"].max_seq_len
    if stream.stop_reason == "context":  # said even with --no-stats: the text is cut short
        click.echo(f"note: stopped at {info['spec'].name}'s context of {context:,} tokens "
                   f"({info['prompt_tokens']:,} in the prompt, {len(stream.tokens):,} new; "
                   f"--new-tokens asked for {new_tokens:,})", err=True)
    if stats:
        rate = stream.decode_tokens_per_s
        stop = {"max_new_tokens": "--new-tokens reached",
                "context": f"the model's context ({context:,} tokens) reached"
                }.get(stream.stop_reason, stream.stop_reason)
        click.echo(f"[{info['spec'].name} on {info['device']} ({info['dtype']}"
                   f"{', ' + info['weight_format'] + ' linears' if info['weight_format'] else ''}"
                   f"): loaded in "
                   f"{info['load_s']:.2f} s; prompt {info['prompt_tokens']} tokens, "
                   f"{len(stream.tokens)} new in {stream.first_token_s + stream.decode_s:.2f} s"
                   f"{f', {rate:.1f} tokens/s after the first' if rate else ''}; "
                   f"stopped: {stop}]", err=True)


@cli.command("make-checkpoint")
@click.argument("model")
@weights_option("The checkpoint folder to write (then read by generate, profile --weights and "
                "show).", required=True)
@_set_option
@dtype_option(RUN_DTYPES, default="bf16")
@click.option("--shard-size", default="5GB", show_default=True,
              help="Largest safetensors file (e.g. 2GB, 500MB, 1GiB); more makes shards.")
@seed_option(0, "Seed of the random weights.")
@device_option("Where the random weights are drawn: cpu, cuda or cuda:N (cuda is faster for "
               "large models).")
@click.option("--force", is_flag=True, help="Replace the contents of a non-empty --weights "
                                            "folder.")
def make_checkpoint(model, weights_dir, overrides, dtype, shard_size, seed, device, force):
    """Write a random-init HF-format checkpoint of MODEL into the --weights folder:
    config.json, safetensors shards, generation_config.json and a small tokenizer (trained
    here) with a chat template. Nothing is downloaded; the folder then works with generate,
    profile --weights and show.

    \b
    Examples:
      archscope make-checkpoint llama-3.2-1b --weights /tmp/llama --set n_layers=2
      archscope generate --weights /tmp/llama --device cpu "Hello"
      archscope make-checkpoint gpt2 --weights /tmp/gpt2 --shard-size 100MB --dtype fp32
    """
    from archscope.measure.timing import to_torch_dtype
    from archscope.progress import progress_bar
    from archscope.spec import load_spec
    from archscope.weights.writer import (check_target, parse_size, progress_units,
                                          write_checkpoint)

    spec, shard_bytes = load_spec(model, overrides), parse_size(shard_size)
    check_target(weights_dir, force)  # before the steps are counted (on meta, yet a build)
    steps = progress_units(spec, to_torch_dtype(dtype), shard_bytes)
    with progress_bar("make-checkpoint", steps) as tick:
        summary = write_checkpoint(spec, weights_dir, dtype=to_torch_dtype(dtype), seed=seed,
                                   shard_size=shard_bytes, device=device, force=force,
                                   progress=tick)
    click.echo(f"wrote {summary['folder']}: {spec.name} as {summary['model_type']}, "
               f"{summary['tensors']} tensors in {len(summary['files'])} file(s), "
               f"{summary['bytes'] / 1e9:,.3f} GB ({dtype}); tokenizer with "
               f"{summary['tokenizer_vocab']} ids (random weights: the text will be noise)")
