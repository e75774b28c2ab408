"""The local CPU's rates for one model, measured on the kernels its forward runs.

A square-matmul and a copy probe (probe.py) say little about a model's forward: decode is a
row of matrix-vector products whose speed depends on each matrix's shape (a 2,048-wide row is
not a 128k-tall head), and prefill is matmuls of `tokens` rows against each weight, far from
a square 1,024 product (in bf16 on a CPU without bf16 units, tens of times apart). So this
module times the dense linear the built model runs (archscope.nn.linear: F.linear, or
oneDNN's kernel for fp32 on a CPU), under inference mode as the model runs, at each distinct
weight shape of the model, with the number of token rows each phase feeds it, and turns the
times into two effective rates:

- decode bandwidth = the weight bytes of one step / the summed time of its matrix-vector
  products (each weight read once per step, as in the model);
- prefill FLOP/s = the FLOPs of the prompt's matmuls / their summed time.

A roofline priced at these rates predicts each phase as the sum of its kernels' measured
times (the phase's other work, attention and norms, at the same rates). Measurement details:
each decode probe cycles through copies of the matrix adding up to the bytes one step of the
model reads (a model reads every weight once per step: a large one's weights are out of the
caches by their next read, a toy's stay in them; past FLUSH_BYTES, the set outgrows any cache);
shapes larger than a probe budget are cut to fewer output rows (or prompt rows) and the time
scaled up in proportion, which holds once a kernel is that large. Every time is the best of a
few calls, like a peak. A weight-only quantized format (int8, int4-g128) is timed on the kernels
`profile --weight-format` runs (archscope.nn.quantized: dequantisation included), and its
bandwidth counts the format's bytes. Torch and archscope.nn are imported on first use.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

FLUSH_BYTES = 256 << 20  # more than a server CPU's last-level cache, per decode probe
MAX_COPY_BYTES = 128 << 20  # one probed matrix at most this large (taller ones are cut)
MAX_MATMUL_FLOPS = 4e9  # one probed prefill matmul at most this much work
REPEATS = 5  # timed calls at most; fewer once BUDGET_S is spent (a slow bf16 CPU matmul)
BUDGET_S = 0.5
REUSED_TOKENS = 8  # from this many token rows a matmul reuses its weight enough to be compute-
# bound: one copy is timed (a decode-sized product needs copies that outgrow the caches)


@dataclass(frozen=True)
class Linear:
    """One weight shape of a model: `count` matrices of rows x cols read per forward, each fed
    `tokens` rows of input, each stored in `nbytes` (its format's bytes: scales included)."""

    rows: int
    cols: int
    count: float  # matrices of this shape one forward reads (MoE: the expected experts)
    tokens: int
    nbytes: int
    kernel: str | None = None  # a weight-only quantized kernel (archscope.nn.quantized)


@dataclass(frozen=True)
class Workload:
    """The matmuls of one decode step and one prefill, in one dtype (built by
    archscope.estimate.kernel_shapes from a spec)."""

    dtype: str  # 'fp32', 'bf16', 'fp16'
    decode: tuple[Linear, ...]
    prefill: tuple[Linear, ...]


@dataclass(frozen=True)
class Rates:
    """Effective rates of a workload on this machine, with what they came from."""

    decode_bytes_per_s: float
    prefill_flops_per_s: float
    decode_seconds: float  # the summed matrix-vector time of one step
    prefill_seconds: float  # the summed matmul time of one prefill
    shapes: int  # distinct shapes probed


def _torch_dtype(name: str):
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


def _best(fn, device: str, calls: int = 1) -> float:
    """The fastest of up to REPEATS timed rounds (after one warm-up; at least two, then no more
    once BUDGET_S is spent), per call: the best, so that a phase's sum is a least time."""
    fn()
    _sync(device)
    best, start = float("inf"), time.perf_counter()
    for i in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
        if i >= 1 and time.perf_counter() - start > BUDGET_S:
            break
    return best / calls


def _layers(rows: int, cols: int, dtype, device: str, kernel: str | None, copies: int,
            packed: bool = False):
    """`copies` callables x -> linear(x, W) of rows x cols: dense weights (`packed`: as
    archscope.nn.linear.pack_weights leaves them), or a quantized kernel's layers (random
    weights: the timing does not depend on the values)."""
    import torch

    from archscope.nn.linear import linear, packed_layer  # the dense kernel, as built
    from archscope.nn.quantized import KERNELS, QuantizedLinear  # the kernels profile runs

    if kernel not in KERNELS:  # dense, or a format archscope has no kernel for: its 16-bit
        # matmul (what a dequantise-then-multiply path runs), reading the format's bytes
        with torch.inference_mode(False):  # weights that can be packed (pack_weights)
            weights = [torch.ones(rows, cols, dtype=dtype, device=device)
                       for _ in range(copies)]
        if packed:
            layers = [packed_layer(w) for w in weights]
            if any(layer.packed is None for layer in layers):
                raise ValueError(f"{dtype} weights on {device} have no packed layout")
            return layers
        return [lambda x, w=w: linear(x, w) for w in weights]
    return [QuantizedLinear.random(rows, cols, kernel, dtype, device, seed=i)
            for i in range(copies)]


# (rows, cols, tokens, dtype, device, kernel, nbytes) -> the fastest seconds seen, per process:
# a model's shapes repeat across layers, and a later reading (fit after profile) sees the same
_TIMED: dict[tuple, float] = {}


def linear_seconds(rows: int, cols: int, tokens: int, dtype: str, device: str = "cpu",
                   kernel: str | None = None, nbytes: int | None = None,
                   step_bytes: float = FLUSH_BYTES, packed: bool = False) -> float:
    """Seconds of one `linear(x [tokens, cols], W [rows, cols])` on this machine, dense in
    `dtype` or held by a quantized `kernel` (`nbytes`: the matrix's stored bytes), its weight
    read as a model reading `step_bytes` of weights a step reads it: the probe cycles through
    copies adding up to that (at most FLUSH_BYTES, which no cache holds); `packed`: a dense
    weight packed as `profile --pack-weights` packs it. Timed once per process (see
    `retime`)."""
    step_bytes = min(int(step_bytes), FLUSH_BYTES)  # past it every size reads from memory alike
    key = (rows, cols, tokens, dtype, device, kernel, nbytes, step_bytes, packed)
    if key not in _TIMED:
        _TIMED[key] = _time_linear(*key)
    return _TIMED[key]


def retime() -> None:
    """Time every shape timed so far again and keep the faster time of each: a probe is a best
    of a few calls, and on a shared machine one round can read low (measure/predicted.py
    retimes when a whole forward beats its own kernels)."""
    for key, seconds in _TIMED.items():
        _TIMED[key] = min(seconds, _time_linear(*key))


def forget() -> None:
    """Drop the per-process timings, so the next `measure` probes the kernels afresh."""
    _TIMED.clear()


def _time_linear(rows: int, cols: int, tokens: int, dtype: str, device: str,
                 kernel: str | None, nbytes: int | None, step_bytes: int,
                 packed: bool) -> float:
    import torch

    tdtype = _torch_dtype(dtype)
    item = (nbytes / (rows * cols) if nbytes
            else torch.empty((), dtype=tdtype).element_size())
    probe_rows = max(1, min(rows, int(MAX_COPY_BYTES // (cols * item))))
    if kernel is not None:  # the int4 kernel takes whole 16-row tiles; keep the cut a multiple
        probe_rows = rows if probe_rows >= rows else max(64, probe_rows // 64 * 64)
    probe_tokens = tokens
    while 2 * probe_tokens * probe_rows * cols > MAX_MATMUL_FLOPS and probe_rows > 256:
        probe_rows //= 2
    while 2 * probe_tokens * probe_rows * cols > MAX_MATMUL_FLOPS and probe_tokens > 64:
        probe_tokens //= 2
    copies = max(1, int(-(-step_bytes // (probe_rows * cols * item))))
    if tokens >= REUSED_TOKENS:
        copies = 1
    layers = _layers(probe_rows, cols, tdtype, device, kernel, copies, packed)
    x = torch.randn(probe_tokens, cols, device=device).to(tdtype)

    def run():
        with torch.inference_mode():  # as the model runs (no autograd: oneDNN's fp32 kernel)
            for layer in layers:
                layer(x)

    seconds = _best(run, device, copies)
    return seconds * (rows / probe_rows) * (tokens / probe_tokens)


def measure(workload: Workload, device: str = "cpu", packed: bool = False) -> Rates:
    """The workload's effective decode bandwidth and prefill FLOP/s (see the module doc);
    `packed`: its dense weights packed as `profile --pack-weights` packs them."""
    dec_bytes = sum(m.count * m.nbytes for m in workload.decode)  # a step's weights

    def seconds(m: Linear) -> float:
        return linear_seconds(m.rows, m.cols, m.tokens, workload.dtype, device, m.kernel,
                              m.nbytes if m.kernel else None, dec_bytes,
                              packed and m.kernel is None)

    dec_s = sum(m.count * seconds(m) for m in workload.decode)
    pre_flops = sum(2 * m.count * m.tokens * m.rows * m.cols for m in workload.prefill)
    pre_s = sum(m.count * seconds(m) for m in workload.prefill)
    shapes = {(m.rows, m.cols, m.tokens, m.kernel) for m in workload.decode + workload.prefill}
    return Rates(dec_bytes / dec_s, pre_flops / pre_s, dec_s, pre_s, len(shapes))
