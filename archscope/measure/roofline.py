"""Roofline predictions: FLOPs and bytes moved per phase (from archscope.estimate) against a
hardware profile's peak matmul FLOP/s and memory bandwidth.

A phase takes max(compute time, memory time): time = max(FLOPs / peak FLOP/s, bytes / bandwidth).
Both are lower bounds, so a prediction is the best the hardware could do, never an average.

- prefill of P tokens, batch B: FLOPs = estimate.prefill_flops (causal), with the lm_head term
  for the last position only (generation asks for no other logits); bytes = weights read once
  (`weights_read_bytes` with B*P tokens) + the KV cache written (kv_cache_bytes at P).
- decode step at context N (the new token reads N keys, itself included): FLOPs =
  estimate.decode_flops(N, B); bytes = weights read (B tokens) + the cache read
  (kv_cache_bytes at N). Over the T-1 steps after the prompt (N = P+1 .. P+T-1),
  tokens/s = B * (T-1) / sum of the step times.
Left out: activation traffic, kernel launch and framework overhead, attention kernels that
re-read K/V, caches smaller than the working set. A GPU is a part of the hardware catalog
(`preset`: hardware/catalog.yaml, the one home of datasheet peaks), which real kernels reach
only in part; `local` is this machine priced at the model's own kernels
(`local_kernels`: its decode matrix-vector products and prefill matmuls, timed at their shapes),
so a local prediction is what those kernels alone take. `calibrate` measures the machine's
fastest streaming read instead: the ceiling no decode step can pass (the profile's
bandwidth limit).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from archscope.errors import InputError
from archscope.estimate import (canonical_dtype, count_params, decode_flops, kv_cache_bytes,
                                nbytes, prefill_flops)
from archscope.estimate.parallel import split
from archscope.estimate.structure import ffn_parts
from archscope.hardware.catalog import catalog_part, part_for_device
from archscope.spec import ModelSpec

@dataclass(frozen=True)
class Hardware:
    name: str
    flops_per_s: dict[str, float]  # peak dense matmul FLOP/s by dtype
    bandwidth: float  # memory bytes/s
    source: str
    memory_bytes: int | None = None

    def peak_flops(self, dtype: str) -> float:
        dtype = canonical_dtype(dtype)
        if dtype not in self.flops_per_s:
            raise InputError(f"hardware profile {self.name} has no {dtype} peak; "
                             f"it has {', '.join(self.flops_per_s)}")
        return self.flops_per_s[dtype]


def preset(name: str) -> Hardware:
    """A catalog part (hardware/catalog.yaml, one home for every datasheet figure) as the
    roofline's hardware: its dense peaks by dtype (fp32 the plain FP32 peak: PyTorch keeps TF32
    off for fp32 matmuls by default) and its memory bandwidth. An unknown name raises
    UnknownHardwareError with the closest names."""
    return _from_part(catalog_part(name))


def preset_for_gpu(gpu_name: str) -> Hardware | None:
    """The catalog part a CUDA device name names ('NVIDIA H200' -> h200), or None."""
    part = part_for_device(gpu_name)
    return _from_part(part) if part else None


def _from_part(part) -> Hardware:
    return Hardware(part.name, dict(part.peak_flops), part.memory_bandwidth,
                    f"{part.title}: {part.source_title}", part.memory_bytes)


def weights_read_bytes(spec: ModelSpec, dtype: str, tokens: int = 1,
                       weight_format: str | None = None) -> int:
    """Weight bytes one forward over `tokens` tokens reads from memory (dense in `dtype`, or
    stored in `weight_format`: priced tensor by tensor as `fit` prices it, estimate/parallel.py).

    Every parameter except the lookup tables (embedding rows and learned positions: only the
    used rows are touched), plus the token embedding when tied (the lm_head reads all of it).
    MoE experts: the expected number touched by `tokens` tokens each routed to top_k of
    n_experts uniformly, n * (1 - (1 - top_k/n)^tokens), summed over the MoE layers.
    """
    if weight_format is not None:
        return round(split(spec, 1, 1, weight_format).weights_read_bytes(tokens))
    p = count_params(spec)
    read = p.total - p.embedding + (p.breakdown.get("embedding", 0) if spec.tie_embeddings else 0)
    for layer in spec.plan:
        for part in ffn_parts(layer.ffn, spec.d_model) if layer.ffn else []:
            if part.copies > part.active:  # routed experts: only some are read
                touched = part.copies * (1 - (1 - part.active / part.copies) ** tokens)
                read -= round(part.params * (part.copies - touched))
    return nbytes(read, dtype)


@dataclass(frozen=True)
class Prediction:
    seconds: float
    flops: int
    bytes: int
    compute_s: float
    memory_s: float
    extra: dict = field(default_factory=dict)

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s >= self.memory_s else "memory"


def predict_prefill(spec: ModelSpec, hw: Hardware, prompt_len: int, batch: int,
                    dtype: str, weight_format: str | None = None) -> Prediction:
    """Time to run a prompt of `prompt_len` tokens (logits of the last position only);
    `weight_format`: weights stored in it (weight-only: the compute stays in `dtype`)."""
    f = prefill_flops(spec, prompt_len, batch)
    lm_head = f.by_component["lm_head"]
    flops = f.total - lm_head + lm_head // prompt_len
    moved = (weights_read_bytes(spec, dtype, batch * prompt_len, weight_format)
             + kv_cache_bytes(spec, prompt_len, batch, dtype))
    compute, memory = flops / hw.peak_flops(dtype), moved / hw.bandwidth
    return Prediction(max(compute, memory), flops, moved, compute, memory)


def predict_decode(spec: ModelSpec, hw: Hardware, prompt_len: int, new_tokens: int,
                   batch: int, dtype: str, mla_flops: str = "absorbed",
                   weight_format: str | None = None) -> Prediction:
    """The T-1 decode steps after a prompt; extra['tokens_per_s'] = B*(T-1) / their time.
    `mla_flops`: the MLA decode convention the model runs (estimate/flops.py)."""
    steps = range(prompt_len + 1, prompt_len + new_tokens)
    weights = weights_read_bytes(spec, dtype, batch, weight_format)
    flops = moved = 0
    seconds = compute = memory = 0.0
    for context in steps:
        step_flops = decode_flops(spec, context, batch, mla=mla_flops).total
        step_bytes = weights + kv_cache_bytes(spec, context, batch, dtype)
        c, m = step_flops / hw.peak_flops(dtype), step_bytes / hw.bandwidth
        flops, moved = flops + step_flops, moved + step_bytes
        seconds, compute, memory = seconds + max(c, m), compute + c, memory + m
    tokens = batch * len(steps)
    return Prediction(seconds, flops, moved, compute, memory,
                      {"tokens_per_s": tokens / seconds if seconds else None,
                       "bytes_per_step": moved // max(len(steps), 1)})


def local_kernels(spec: ModelSpec, device: str, dtype: str, batch: int, prompt_len: int,
                  weight_format: str | None = None, packed: bool = False) -> Hardware:
    """This machine as the rates of `spec`'s own kernels at this run's shapes (decode step of
    `batch` tokens, prefill of `batch` prompts of `prompt_len`; weights dense in `dtype`,
    `packed` as `profile --pack-weights` packs them, or in `weight_format`'s kernels):
    archscope.hardware.kernels."""
    from archscope.estimate.kernel_shapes import workload
    from archscope.hardware import kernels

    dtype = canonical_dtype(dtype)
    r = kernels.measure(workload(spec, dtype, batch, prompt_len, weight_format=weight_format),
                        device, packed)
    counts = Counter(kernel for *_, kernel in r.kernels)
    chosen = ", ".join(f"{kernel} {n}" for kernel, n in sorted(counts.items()))
    return Hardware(f"local-{device.split(':')[0]}", {dtype: r.prefill_flops_per_s},
                    r.decode_bytes_per_s,
                    f"measured: this model's {weight_format or dtype}"
                    f"{' packed' if packed else ''} matmuls at its {r.shapes} "
                    "weight shapes "
                    f"(decode step {1e3 * r.decode_seconds:.1f} ms of matrix-vector products, "
                    f"prefill {1e3 * r.prefill_seconds:.1f} ms of matmuls; kernels chosen by "
                    f"timing: {chosen})")


def calibrate(device: str = "cpu", dtype: str = "fp32", seconds: float = 0.3) -> Hardware:
    """A profile of this machine from a short measured run (the best of repeats, like a peak).

    FLOP/s: square matmuls at `dtype`, the size doubled until one takes > 20 ms (CPU: at most
    2048; CUDA: 8192). Bandwidth: the fastest of three streaming kernels over a buffer much
    larger than the caches (CPU: hardware.kernels.FLUSH_BYTES, twice the largest cache and at
    least 256 MiB; CUDA 1 GiB): a copy (bytes read + written; a CPU's
    write-allocate traffic is not counted, so it reads low there), a sum (read only) and a
    matrix-vector product at `dtype` (read only: the kernel a decode step is made of).
    """
    import torch

    from archscope.measure.timing import sync, to_torch_dtype

    dev = torch.device(device)
    tdtype = to_torch_dtype(dtype)
    n_max = 8192 if dev.type == "cuda" else 2048
    n = 256
    while True:
        a = torch.randn(n, n, device=dev).to(tdtype)
        took = _best(lambda: a @ a, dev, seconds / 4)
        if took > 20e-3 or n >= n_max:
            break
        n *= 2
    flops = 2 * n ** 3 / _best(lambda: a @ a, dev, seconds)
    del a
    kernel, bandwidth = _bandwidth(dev, tdtype, seconds)
    sync(dev)
    if dev.type == "cuda":
        torch.cuda.empty_cache()  # hand the buffers back before the model is allocated
    return Hardware(f"local-{dev.type}", {canonical_dtype(dtype): flops}, bandwidth,
                    f"measured: {n}x{n} {canonical_dtype(dtype)} matmul; bandwidth of a {kernel}")


def _bandwidth(dev, tdtype, seconds: float) -> tuple[str, float]:
    """(kernel, bytes/s) of the fastest streaming kernel (see `calibrate`)."""
    import torch

    from archscope.nn.linear import plain_kernels

    from archscope.hardware.kernels import FLUSH_BYTES

    nbytes = 1 << 30 if dev.type == "cuda" else FLUSH_BYTES
    src = torch.ones(nbytes // 4, device=dev)
    dst = torch.empty_like(src)
    rates = {"copy": 2 * nbytes / _best(lambda: dst.copy_(src), dev, seconds / 3),
             "sum": nbytes / _best(lambda: src.sum(), dev, seconds / 3)}
    del src, dst
    item = torch.empty((), dtype=tdtype).element_size()
    rows = nbytes // item // 4096
    matrix = torch.ones(rows, 4096, device=dev, dtype=tdtype)
    vector = torch.ones(1, 4096, device=dev, dtype=tdtype)

    for name, kernel in plain_kernels(tdtype).items():  # each dense kernel a step may run
        def product(kernel=kernel):  # as the model runs it (archscope.nn.linear)
            with torch.inference_mode():
                kernel(vector, matrix, None)

        product_s = _best(product, dev, seconds / 3 / len(plain_kernels(tdtype)))
        rates[f"matrix-vector product ({name})"] = rows * 4096 * item / product_s
    kernel = max(rates, key=rates.get)
    return f"{nbytes >> 20} MiB {kernel}", rates[kernel]


def _best(fn, dev, seconds: float) -> float:
    """The fastest of repeated calls (at least 3, for about `seconds`), synchronised."""
    from archscope.measure.timing import sync

    fn()
    sync(dev)
    best, spent, calls = float("inf"), 0.0, 0
    while calls < 3 or spent < seconds:
        t0 = time.perf_counter()
        fn()
        sync(dev)
        took = time.perf_counter() - t0
        best, spent, calls = min(best, took), spent + took, calls + 1
    return best
