"""Checks before anything is allocated: sane options, a usable device, enough memory."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from archscope.devices import available_bytes, resolve_device  # noqa: F401 (profile imports it)
from archscope.errors import InputError
from archscope.estimate import inference_memory
from archscope.estimate.memory import activation_bytes
from archscope.spec import ModelSpec


@dataclass(frozen=True)
class ProfileOptions:
    device: str = "cpu"
    dtype: str = "fp32"
    batch: int = 1
    prompt_len: int = 128
    new_tokens: int = 32
    repeats: int = 3
    warmup: int = 1  # at least 1: it also holds the peak-memory measurement and graph capture
    compare_hf: bool = False
    hf_cache: str = "dynamic"  # transformers' cache_implementation: dynamic or static
    compile: bool | None = None  # None: compiled on CUDA (no --weight-format), eager on CPU
    breakdown: bool = False
    hardware: str = "auto"  # auto, local, or a catalog part (h200, h100-sxm, ...: hardware/catalog.yaml)
    seed: int = 0
    weights: str | None = None  # an HF checkpoint folder; None: random-init
    # The key=value what-ifs (spec overrides), exactly as given and in order. The spec passed
    # to `profile` already has them applied; they are only recorded, so a run of a variant says
    # it is one.
    overrides: tuple[str, ...] = ()
    # The MLA decode form the builder runs and the roofline counts: absorbed or recompute (its
    # cache holds only the latent, so the `naive` convention has nothing to run).
    mla_flops: str = "absorbed"
    # Weight-only quantized linears (int8, int4): None runs every weight in `dtype`.
    weight_format: str | None = None
    # bf16 on a CPU, eager or compiled: the linears run on copies of their weights in oneDNN's
    # blocked layout (archscope.nn.linear.pack_weights: faster products, a second copy of the
    # bytes).
    pack_weights: bool = False

    @property
    def context(self) -> int:
        """Cache slots: the prompt and every new token."""
        return self.prompt_len + self.new_tokens


def check_options(spec: ModelSpec, o: ProfileOptions) -> None:
    for name, least in (("batch", 1), ("prompt_len", 1), ("new_tokens", 2), ("repeats", 1),
                        ("warmup", 1)):
        value = getattr(o, name)
        if not isinstance(value, int) or value < least:
            raise InputError(f"{name} must be an integer >= {least}, got {value!r}"
                             + (" (decode speed needs a token after the first)"
                                if name == "new_tokens" else ""))
    if o.context > spec.max_seq_len:
        raise InputError(f"prompt ({o.prompt_len}) + new tokens ({o.new_tokens}) = {o.context} "
                         f"exceeds {spec.name}'s max_seq_len {spec.max_seq_len}")
    if o.hf_cache not in ("dynamic", "static"):
        raise InputError(f"hf_cache must be 'dynamic' or 'static', got {o.hf_cache!r}")
    if o.pack_weights and (not o.device.startswith("cpu") or o.dtype != "bf16"
                           or o.weight_format):
        raise InputError(
            f"--pack-weights is for a bf16 run on the CPU (oneDNN's packed layout), got "
            f"device {o.device!r}, dtype {o.dtype!r}"
            + (f", --weight-format {o.weight_format}" if o.weight_format else ""))
    if o.pack_weights:
        from archscope.nn.linear import packing_unavailable

        if (why := packing_unavailable()) is not None:
            raise InputError(f"--pack-weights cannot run here: {why}. Run without it: bf16 "
                             "linears then run on F.linear.")
    if o.weight_format is not None:
        from archscope.measure.quantized import check_quantized_run

        check_quantized_run(spec, o.weight_format, o.dtype, **{"--compare-hf": o.compare_hf,
                                                                "--compile": o.compile})


def memory_needed(spec: ModelSpec, o: ProfileOptions) -> dict[str, int]:
    """The estimator's bytes for this run, by part.

    archscope: weights + cache of prompt+new tokens + the activations of the prefill (its
    logits for the last position only). With compare_hf, transformers shares the weights but
    adds its own cache and activations, and the logit comparison holds both models' logits for
    every prompt position (plus their difference).
    """
    mem = inference_memory(spec, o.context, o.batch, o.dtype)
    need = {"weights": mem.weights, "kv_cache": mem.kv_cache, "activations": mem.activations}
    if o.compare_hf:
        full = activation_bytes(spec, o.prompt_len, o.batch, mem.kv_dtype, all_logits=True)
        need["transformers_cache_and_activations"] = mem.kv_cache + mem.activations
        need["logit_comparison"] = 3 * (full - activation_bytes(spec, o.prompt_len, o.batch,
                                                                mem.kv_dtype))
    return need


def check_fits(spec: ModelSpec, o: ProfileOptions, device: torch.device) -> dict[str, int]:
    """Refuse (InputError) when the estimate exceeds the free memory; returns the estimate."""
    need = memory_needed(spec, o)
    free = available_bytes(device)
    total = sum(need.values())
    if free is not None and total > free:
        where = "free GPU memory" if device.type == "cuda" else "available RAM"
        parts = ", ".join(f"{k} {v / 1e9:,.2f} GB" for k, v in need.items())
        raise InputError(
            f"{spec.name} will not fit: the run needs about {total / 1e9:,.2f} GB ({parts}) but "
            f"only {free / 1e9:,.2f} GB of {where} is free on {device}. Nothing was allocated. "
            f"Shrink it with a smaller batch, prompt_len or new_tokens, "
            f"{'a 16-bit dtype, ' if o.dtype == 'fp32' else ''}or fewer layers (the override "
            f"n_layers=2).")
    return need


def pack_weights_if_they_fit(model, device: torch.device) -> int:
    """archscope.nn.linear.pack_weights once the second copy is known to fit in the available
    RAM (InputError, nothing packed, if not); how many linears it packed."""
    from archscope.nn.linear import pack_weights, packed_bytes

    need, free = packed_bytes(model), available_bytes(device)
    if free is not None and need > free:
        raise InputError(f"--pack-weights needs {need / 1e9:,.2f} GB more for the packed copies "
                         f"but only {free / 1e9:,.2f} GB of RAM is available; nothing was "
                         f"packed. Run without it, or with fewer layers (n_layers=2).")
    return pack_weights(model)


def choose_linear_kernels(spec: ModelSpec, o: ProfileOptions, device: torch.device,
                          progress=None) -> list:
    """On a CPU, time the candidate kernels of every dense product the run makes, at its
    shapes, and record the fastest for the model to run (archscope.hardware.kernels); the
    choices, for the record (none elsewhere: a GPU runs F.linear). `progress(label)` after
    each product is timed (tens of seconds in all on a small CPU)."""
    if device.type != "cpu":
        return []
    from archscope.hardware import kernels

    rates = kernels.measure(_products(spec, o), "cpu", o.pack_weights, progress)
    return [{"rows": rows, "cols": cols, "tokens": tokens, "kernel": kernel}
            for rows, cols, tokens, kernel in rates.kernels]


def _products(spec: ModelSpec, o: ProfileOptions):
    from archscope.estimate.kernel_shapes import workload

    return workload(spec, o.dtype, o.batch, o.prompt_len, weight_format=o.weight_format)


def progress_units(spec: ModelSpec, o: ProfileOptions) -> int:
    """How many times `profile` calls its progress callback (a progress bar's total): each
    product timed (on a CPU: choose_linear_kernels), the calibration, each layer's random
    weights drawn (nn.build), the build, each warm-up and repeat, transformers' build and
    warm-ups, the breakdown, and the compiled step's eager check. The options are checked
    first, as `profile` checks them."""
    check_options(spec, o)
    device = resolve_device(o.device)
    products = _products(spec, o) if device.type == "cpu" else None
    runs = o.warmup + o.repeats
    hf = o.warmup + 1 if o.compare_hf else 0
    drawn = len(spec.plan) if o.weights is None else 0
    return (2 + (len(products.decode) + len(products.prefill) if products else 0) + drawn
            + runs + hf + o.breakdown + (runs if compiles(o, device) else 0))


def compiles(o: ProfileOptions, device) -> bool:
    """Whether the run's decode step is compiled: as asked, else by default on CUDA (where the
    eager step's kernel launches, not the weights, set the pace at batch 1) and not on the
    CPU (where compiling costs tens of seconds and gains little over the matmuls)."""
    if o.compile is not None:
        return o.compile
    return device.type == "cuda" and not o.weight_format
