"""`archscope profile`: run the built model, time it honestly, and put the measurements beside
the estimators, the roofline and (optionally) transformers on the same weights.

Method (gpt-fast style): one pre-allocated cache of prompt + new tokens, reused (reset) by every
run; warm-up runs first (allocator, kernels, graph capture); every timed region starts and
ends with a device synchronisation; each run times the prefill (the prompt through the cache
up to the first token: time to first token) and the decode (the new_tokens - 1 steps after it).
Decode tokens/s counts every sequence of the batch: batch * (new_tokens - 1) / decode seconds.
Medians over the repeats, with min, max and interquartile range beside them. With --compare-hf
transformers' model is stepped through its own cache and timed by the same stopwatch
(archscope.measure.timed), after the same warm-up; the repeats of the two models alternate, so
drifts of a shared machine hit both alike, and each pair gives a ratio (median and range
reported). Every timed phase is checked against the bandwidth measured in the same run
(archscope.measure.limits): one faster than its bytes allow is a measurement error, listed in
`measurement_errors` and left out of every figure.
The record names the model as its spec does (`model`) and the `--set` what-ifs the run applied
to it (`overrides`, the exact `key=value` strings in the order given; empty for the preset as
shipped). The library returns a plain dict; the CLI renders and saves it.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from typing import Callable

import torch

from archscope.estimate import model_record
from archscope.measure import limits, predicted, reference, roofline, timed
from archscope.measure.fast import decode_step
from archscope.measure.generate import Step, decode, eager_step, greedy, prefill
from archscope.measure.preflight import (ProfileOptions, check_fits, check_options,
                                         choose_linear_kernels, compiles,
                                         pack_weights_if_they_fit, resolve_device)
from archscope.measure.quantized import decode_weight_bytes, quantize_for_run
from archscope.measure.resources import PeakMemory
from archscope.measure.timing import Stats, to_torch_dtype
from archscope.nn.build import build_model
from archscope.nn.cache import KVCache
from archscope.nn.mla import set_mla_decode_form
from archscope.nn.quantized import held_weight_bytes
from archscope.nn.model import DecoderLM
from archscope.spec import ModelSpec

Progress = Callable[[str], None]


@dataclass
class Run:
    """The model under test and what its runs share: one cache, one prompt, one decode step."""

    model: DecoderLM
    spec: ModelSpec
    weights: str  # "random-init" or the checkpoint folder
    cache: KVCache
    prompt: torch.Tensor
    step: Step
    step_kind: str
    tokens: torch.Tensor | None = None  # the greedy tokens of the last warm-up
    quantization: dict = field(default_factory=dict)  # --weight-format's fields (quantized.py)


def profile(spec: ModelSpec, options: ProfileOptions, progress: Progress | None = None) -> dict:
    """Measure `spec`, with random weights or the checkpoint `options.weights` (see the
    module doc); returns the record. `progress(label)` after each step
    (preflight.progress_units counts them)."""
    o, tick = options, progress or (lambda _label: None)
    check_options(spec, o)
    device = resolve_device(o.device)
    needed = check_fits(spec, o, device)  # before anything is allocated
    compiled = compiles(o, device)
    linear_kernels = choose_linear_kernels(spec, o, device, tick)  # what its products run
    local = roofline.calibrate(device.type, o.dtype)  # the ceiling: fastest streaming read
    hardware = predicted.roofline_hardware(spec, o, device)
    tick("calibrated")

    peak = PeakMemory(device)
    peak.start()
    run = _prepare(spec, o, device, compiled, tick)
    peak_bytes = peak.peak_bytes()  # the model, its cache and whole generations; nothing else
    if compiled:
        peak.method += "; includes what torch.compile itself allocated while compiling"
    hf, hf_tokens = _prepare_hf(run, o, tick) if o.compare_hf else (None, None)
    ours, theirs = _repeats(run, hf, o, tick)
    wall = limits.wall_for(run.spec, local, o.prompt_len, o.new_tokens, o.batch, o.dtype,
                           o.mla_flops, o.weight_format)
    wall, local = limits.settle(wall, local, ours + theirs,
                                lambda: roofline.calibrate(device.type, o.dtype))
    ours_pre, ours_dec, errors = limits.screen(ours, wall, "archscope")

    timings = _timings(ours_pre, ours_dec, o)
    hardware = predicted.settle_kernels(run.spec, o, device, hardware, timings["prefill_ms"],
                                        timings["decode_tokens_per_s"])
    record = {
        "model": run.spec.name, "overrides": list(o.overrides),  # the --set what-ifs, as given
        "device": str(device), "dtype": o.dtype, "weights": run.weights,
        "batch": o.batch, "prompt_len": o.prompt_len, "new_tokens": o.new_tokens,
        "repeats": o.repeats, "warmup": o.warmup, "decode_step": run.step_kind,
        "compiled": compiled, "pack_weights": o.pack_weights, "linear_kernels": linear_kernels,
        "mla_flops": o.mla_flops,
        **timings,
        "peak_memory_bytes": peak_bytes, "peak_memory_method": peak.method,
        "estimated_memory_bytes": sum(needed[k] for k in ("weights", "kv_cache", "activations")),
        **_sizes(run, o),
        **predicted.predictions(run.spec, o, hardware, local, timings["decode_tokens_per_s"]),
        **_environment(device, hf is not None),
        "bandwidth_wall": wall.as_dict(), "measurement_errors": errors,
    }
    if hf is not None:
        theirs_pre, theirs_dec, hf_errors = limits.screen(theirs, wall, "transformers")
        errors += hf_errors
        record.update(_hf_fields(run, hf, hf_tokens, (ours_pre, ours_dec),
                                 (theirs_pre, theirs_dec), o))
    if compiled:
        record.update(_eager_check(run, o, wall, errors, tick))
    if run.quantization:
        record.update(run.quantization)
        record["decode_weight_bandwidth_bytes_per_s"] = round(
            record["decode_tokens_per_s"] / o.batch * decode_weight_bytes(run.model))
    if o.breakdown:
        record["breakdown"] = _breakdown(run, o, device)
        tick("breakdown")
    return record


def _prepare(spec: ModelSpec, o: ProfileOptions, device: torch.device, compiled: bool,
             tick) -> Run:
    """Build (or load) the model, its cache and prompt; run the warm-ups."""
    model, spec, weights = _model(spec, o, device, to_torch_dtype(o.dtype), tick)
    generator = torch.Generator().manual_seed(o.seed)
    prompt = torch.randint(0, spec.vocab_size, (o.batch, o.prompt_len), generator=generator)
    step, step_kind = decode_step(model, compiled, device)
    if o.pack_weights:
        step_kind += f", {pack_weights_if_they_fit(model, device)} linears on packed weights"
    quantization = quantize_for_run(model, o.weight_format, prompt.to(device)) \
        if o.weight_format else {}
    run = Run(model, spec, weights, model.new_cache(o.batch, o.context), prompt.to(device),
              step, step_kind, quantization=quantization)
    tick("built")
    for k in range(1, o.warmup + 1):
        run.tokens = timed_generation(model, step, run.prompt, run.cache, o.new_tokens)[0]
        tick(f"warm-up {k}/{o.warmup}")
    return run


def _prepare_hf(run: Run, o: ProfileOptions, tick):
    """transformers' twin on the same weights, stepped through its own cache and warmed up
    as archscope's model is: (reference.HFStepper, its greedy tokens)."""
    hf = reference.HFStepper(reference.hf_twin(run.model), o.context, o.hf_cache)
    tick("transformers built")
    tokens = None
    for _ in range(o.warmup):
        tokens = hf_timed_generation(hf, run.prompt, o.new_tokens)[0]
        tick("transformers warm-up")
    return hf, tokens


def _sizes(run: Run, o: ProfileOptions) -> dict:
    """Measured sizes beside the record's (weights and cache both in the run's dtype)."""
    record = model_record(run.spec, o.context, batch=o.batch, weight_format=o.dtype,
                          cache_dtype=o.dtype, mla_flops=o.mla_flops)
    return {"weights_bytes_measured": held_weight_bytes(run.model),
            "weights_bytes_estimated": record.weights_bytes,
            "kv_cache_len": o.context,
            "kv_cache_bytes_measured": run.cache.nbytes(),
            "kv_cache_bytes_estimated": record.at(o.context).cache.bytes}


def _model(spec: ModelSpec, o: ProfileOptions, device: torch.device, dtype: torch.dtype, tick):
    """(model, spec, weights label): random-init (a tick per layer drawn), or the checkpoint
    checked against `spec` (read under the loader's own bar)."""
    if o.weights is None:
        model, weights = build_model(spec, device, dtype, o.seed, tick), "random-init"
    else:
        from archscope.weights.loader import load_checkpoint

        model, spec = load_checkpoint(o.weights, spec, str(device), dtype)
        weights = str(o.weights)
    set_mla_decode_form(model, o.mla_flops)  # decode what the record's FLOPs count
    return model, spec, weights


def timed_generation(model, step, prompt, cache, new_tokens: int):
    """One generation of archscope's model through `cache` (reset first): (tokens
    [B, new_tokens], prefill s, decode s)."""
    cache.reset()
    return timed.timed_generation(lambda ids, c: prefill(model, ids, c), step, prompt, cache,
                                  new_tokens)


def hf_timed_generation(hf: reference.HFStepper, prompt, new_tokens: int):
    """The same for transformers' model, through a fresh (or reset) cache of its own."""
    return timed.timed_generation(hf.forward, hf.forward, prompt, hf.new_cache(), new_tokens)


def _repeats(run: Run, hf, o: ProfileOptions, tick):
    """Timed runs; with transformers, the two alternate. Returns the [(prefill s, decode s)]
    of each (transformers' empty without it)."""
    ours, theirs = [], []
    for k in range(1, o.repeats + 1):
        ours.append(timed_generation(run.model, run.step, run.prompt, run.cache,
                                     o.new_tokens)[1:])
        if hf is not None:
            theirs.append(hf_timed_generation(hf, run.prompt, o.new_tokens)[1:])
        tick(f"repeat {k}/{o.repeats}")
    return ours, theirs


def _timings(prefills: list, decodes: list, o: ProfileOptions, prefix: str = "") -> dict:
    """Median and spread of the runs that passed the bandwidth check (None: rejected); a phase
    with no such run has no figure (None), its runs being in `measurement_errors`."""
    prefill_ms = _stats([1e3 * p for p in prefills if p is not None])
    rate = _stats([o.batch * (o.new_tokens - 1) / d for d in decodes if d is not None])
    return {f"{prefix}prefill_ms": prefill_ms and round(prefill_ms.median, 3),
            f"{prefix}prefill_ms_stats": prefill_ms and prefill_ms.as_dict(),
            f"{prefix}decode_tokens_per_s": rate and round(rate.median, 3),
            f"{prefix}decode_tokens_per_s_stats": rate and rate.as_dict(),
            f"{prefix}decode_ms_per_step": rate and round(1e3 * o.batch / rate.median, 3)}


def _stats(values: list[float]) -> Stats | None:
    return Stats(tuple(values)) if values else None


def _environment(device: torch.device, with_hf: bool) -> dict:
    env = {"torch_version": torch.__version__, "threads": torch.get_num_threads(),
           "cpu": platform.processor() or platform.machine()}
    if device.type == "cuda":
        env["gpu_name"] = torch.cuda.get_device_name(device)
    if with_hf:
        import transformers

        env["transformers_version"] = transformers.__version__
    return env


def _hf_fields(run: Run, hf: reference.HFStepper, hf_tokens, ours, theirs,
               o: ProfileOptions) -> dict:
    """transformers' figures from the same stopwatch (`_timings` with the hf_ prefix), and the
    per-pair ratios archscope / transformers (speed: > 1 means archscope is faster) over the
    pairs whose two runs both passed the bandwidth check. `ours`, `theirs`: (prefill s list,
    decode s list), None where rejected."""
    decode_ratio = _pair_ratios(theirs[1], ours[1])  # time ratio: theirs / ours = speed ratio
    prefill_ratio = _pair_ratios(theirs[0], ours[0])
    return {**_timings(*theirs, o, prefix="hf_"), "hf_cache": o.hf_cache,
            "hf_attention": getattr(hf.hf.config, "_attn_implementation", "sdpa"),
            "hf_timing": "transformers' model stepped through its own cache, one token per "
                         "step, timed by archscope's stopwatch; runs interleaved with "
                         "archscope's",
            "decode_speedup_vs_hf": decode_ratio and round(decode_ratio.median, 3),
            "decode_speedup_vs_hf_stats": decode_ratio and decode_ratio.as_dict(),
            "prefill_speedup_vs_hf": prefill_ratio and round(prefill_ratio.median, 3),
            "prefill_speedup_vs_hf_stats": prefill_ratio and prefill_ratio.as_dict(),
            "max_abs_logit_diff": reference.max_abs_logit_diff(run.model, hf.hf, run.prompt),
            "hf_tokens_match": bool(torch.equal(hf_tokens.cpu(), run.tokens.cpu()))}


def _pair_ratios(numerators: list, denominators: list) -> Stats | None:
    """numerator / denominator of each repeat whose two values both stand."""
    return _stats([a / b for a, b in zip(numerators, denominators)
                   if a is not None and b is not None])


def _eager_check(run: Run, o: ProfileOptions, wall: limits.BandwidthWall, errors: list,
                 tick) -> dict:
    """The reference eager step on the same prompt: its tokens and its decode rate (checked
    against the wall like every other; its errors join `errors`)."""
    runs, eager_tokens, step = [], None, eager_step(run.model)
    for i in range(o.warmup + o.repeats):
        eager_tokens, p, d = timed_generation(run.model, step, run.prompt, run.cache,
                                              o.new_tokens)
        if i >= o.warmup:
            runs.append((p, d))
        tick("eager check")
    prefills, decodes, found = limits.screen(runs, wall, "archscope eager step")
    errors += found
    return {"eager_decode_tokens_per_s": _timings(prefills, decodes, o)["decode_tokens_per_s"],
            "compiled_tokens_match_eager": bool(torch.equal(eager_tokens, run.tokens))}


def _breakdown(run: Run, o: ProfileOptions, device) -> dict:
    """Hooks see module calls only in the eager step (a graph replay bypasses Python)."""
    from archscope.measure.breakdown import breakdown

    steps = o.new_tokens - 1
    run.cache.reset()
    first = greedy(prefill(run.model, run.prompt, run.cache))
    result = breakdown(run.model, lambda: decode(eager_step(run.model), first, run.cache, steps),
                       steps, device)
    return {"step": f"eager decode, {steps} steps after the prompt", **result}
