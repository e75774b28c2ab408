"""The local CPU's rates for one model, measured on the kernels its forward runs, and the choice
of those kernels.

A square-matmul and a copy probe (probe.py) say little about a model's forward: decode is a
row of matrix-vector products whose speed depends on each matrix's shape (a 2,048-wide row is
not a 128k-tall head), and prefill is matmuls of `tokens` rows against each weight, far from
a square 1,024 product (in bf16 on a CPU without bf16 units, tens of times apart). So this
module times the dense linear the built model runs (archscope.nn.linear), under inference mode
as the model runs, at each distinct weight shape of the model, with the number of token rows
each phase feeds it. On a CPU it times every candidate kernel there (F.linear; oneDNN's fp32
kernel; a packed bf16 copy where the run packs and the CPU can) and records the fastest in
archscope.nn.linear, which the model then runs: the choice is measured, not assumed (a kernel
other than F.linear must be MARGIN faster, so that a tie measured as noise keeps F.linear).
The chosen kernels' times become two effective rates:

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

from archscope.hardware.caches import flush_bytes

FLUSH_BYTES = flush_bytes()  # per decode probe, at most: past it every size reads from memory
MAX_COPY_BYTES = 128 << 20  # one probed matrix at most this large (taller ones are cut)
MAX_MATMUL_FLOPS = 4e9  # one probed prefill matmul at most this much work
REPEATS = 5  # timed calls at most; fewer once BUDGET_S is spent (a slow bf16 CPU matmul)
BUDGET_S = 0.5
REUSED_TOKENS = 8  # from this many token rows a matmul reuses its weight enough to be compute-
# bound: one copy is timed (a decode-sized product needs copies that outgrow the caches)
MARGIN = 0.20  # another kernel replaces F.linear only when at least this much faster


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
    # (rows, cols, tokens) -> the kernel chosen and priced for that product (archscope.nn.linear)
    kernels: tuple[tuple[int, int, int, str], ...] = ()


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
            impl: str = "aten"):
    """`copies` callables x -> x @ W.T for W of rows x cols: dense weights run by `impl`
    (archscope.nn.linear's kernels: 'packed' as pack_weights leaves them), or a quantized
    kernel's layers (random weights: the timing does not depend on the values)."""
    import torch

    from archscope.nn.linear import onednn_linear, packed_layer, plain_kernels  # as built
    from archscope.nn.quantized import KERNELS, QuantizedLinear  # the kernels profile runs

    if kernel not in KERNELS:  # dense, or a format archscope has no kernel for: its 16-bit
        # matmul (what a dequantise-then-multiply path runs), reading the format's bytes
        with torch.inference_mode(False):  # weights that can be packed (pack_weights)
            weights = [torch.ones(rows, cols, dtype=dtype, device=device)
                       for _ in range(copies)]
        if impl == "packed":
            layers = [packed_layer(w) for w in weights]
            if any(layer.packed is None for layer in layers):
                raise ValueError(f"{dtype} weights on {device} have no packed layout")
            return [lambda x, p=layer.packed: onednn_linear(x, p, None) for layer in layers]
        fn = plain_kernels(dtype).get(impl) if device.startswith("cpu") or impl == "aten" else None
        if fn is None:
            raise ValueError(f"no {impl!r} kernel for {dtype} weights on {device}")
        return [lambda x, w=w: fn(x, w, None) for w in weights]
    return [QuantizedLinear.random(rows, cols, kernel, dtype, device, seed=i)
            for i in range(copies)]


# (rows, cols, tokens, dtype, device, kernel, nbytes) -> the fastest seconds seen, per process:
# a model's shapes repeat across layers, and a later reading (fit after profile) sees the same
_TIMED: dict[tuple, float] = {}


def linear_seconds(rows: int, cols: int, tokens: int, dtype: str, device: str = "cpu",
                   kernel: str | None = None, nbytes: int | None = None,
                   step_bytes: float = FLUSH_BYTES, impl: str = "aten",
                   rivals: tuple[str, ...] = ()) -> float:
    """Seconds of one `linear(x [tokens, cols], W [rows, cols])` on this machine, dense in
    `dtype` run by `impl` (archscope.nn.linear's kernels: aten, onednn, or packed as
    `profile --pack-weights` packs it) or held by a quantized `kernel` (`nbytes`: the matrix's
    stored bytes), its weight read as a model reading `step_bytes` of weights a step reads it:
    the probe cycles through copies adding up to that (at most FLUSH_BYTES, which no cache
    holds). Timed once per process (see `retime`); `rivals`, other kernels for the same
    product not timed yet, are timed with it in alternation, so that a drift of the machine
    cannot decide between them."""
    step_bytes = min(int(step_bytes), FLUSH_BYTES)  # past it every size reads from memory alike
    key = (rows, cols, tokens, dtype, device, kernel, nbytes, step_bytes, impl)
    if key not in _TIMED:
        keys = [key] + [(*key[:-1], other) for other in rivals if other != impl]
        keys = [k for k in keys if k not in _TIMED]
        _TIMED.update(zip(keys, _time_together(keys) if len(keys) > 1
                          else [_time_linear(*key)]))
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


def _probe(rows: int, cols: int, tokens: int, dtype: str, device: str, kernel: str | None,
           nbytes: int | None, step_bytes: int, impl: str):
    """(a call running the probe's products, how many products it runs, the factor from its
    time to one product at the full shape) for one timing key (see `_time_linear`)."""
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
    layers = _layers(probe_rows, cols, tdtype, device, kernel, copies, impl)
    x = torch.randn(probe_tokens, cols, device=device).to(tdtype)

    def run():
        with torch.inference_mode():  # as the model runs (no autograd: oneDNN's fp32 kernel)
            for layer in layers:
                layer(x)

    return run, copies, (rows / probe_rows) * (tokens / probe_tokens)


def _time_linear(*key) -> float:
    run, copies, scale = _probe(*key)
    return _best(run, key[4], copies) * scale


def _time_together(keys: list[tuple]) -> list[float]:
    """`_time_linear` of each key, their rounds in alternation (one warm-up each first; at
    least two rounds, at most REPEATS, fewer once BUDGET_S per key is spent)."""
    probes = [_probe(*key) for key in keys]
    device = keys[0][4]
    for run, _, _ in probes:
        run()
    _sync(device)
    best, start = [float("inf")] * len(keys), time.perf_counter()
    for i in range(REPEATS):
        for j, (run, _, _) in enumerate(probes):
            t0 = time.perf_counter()
            run()
            _sync(device)
            best[j] = min(best[j], time.perf_counter() - t0)
        if i >= 1 and time.perf_counter() - start > BUDGET_S * len(keys):
            break
    return [b / copies * scale for b, (_, copies, scale) in zip(best, probes)]


def candidates(dtype: str, device: str, packed: bool = False) -> tuple[str, ...]:
    """The dense kernels a model in `dtype` on `device` can run (archscope.nn.linear): F.linear
    everywhere; on a CPU oneDNN's fp32 kernel, and a packed bf16 copy when the run packs
    (`packed`) and this CPU can (nn.linear.packing_unavailable)."""
    from archscope.nn.linear import PACKED_DTYPES, packing_unavailable, plain_kernels

    if not device.startswith("cpu"):
        return ("aten",)
    names = tuple(plain_kernels(_torch_dtype(dtype)))
    if packed and _torch_dtype(dtype) in PACKED_DTYPES and packing_unavailable() is None:
        names += ("packed",)
    return names


def fastest(m: Linear, dtype: str, device: str, step_bytes: float,
            packed: bool = False) -> tuple[str, float]:
    """(kernel, seconds) of the fastest candidate for product `m` (another kernel than
    F.linear only when MARGIN faster), recorded in archscope.nn.linear for the model to run."""
    if m.kernel is not None:  # a quantized layer runs its own kernel: nothing to choose
        return m.kernel, linear_seconds(m.rows, m.cols, m.tokens, dtype, device, m.kernel,
                                        m.nbytes, step_bytes)
    impls = candidates(dtype, device, packed)
    times = {impl: linear_seconds(m.rows, m.cols, m.tokens, dtype, device, None, None,
                                  step_bytes, impl, rivals=impls) for impl in impls}
    best = min(times, key=times.get)
    if times[best] > (1 - MARGIN) * times["aten"]:
        best = "aten"
    if device.startswith("cpu"):
        from archscope.nn.linear import choose

        choose(_torch_dtype(dtype), m.tokens, m.rows, m.cols, best)
    return best, times[best]


def measure(workload: Workload, device: str = "cpu", packed: bool = False,
            progress=None) -> Rates:
    """The workload's effective decode bandwidth and prefill FLOP/s on the kernels chosen for
    it (see the module doc; `fastest` records each choice); `packed`: its dense weights packed
    as `profile --pack-weights` packs them, where this CPU can; `progress(label)` after each
    product of workload.decode, then of workload.prefill, is timed."""
    dec_bytes = sum(m.count * m.nbytes for m in workload.decode)  # a step's weights
    chosen = {}

    def seconds(m: Linear) -> float:
        kernel, took = fastest(m, workload.dtype, device, dec_bytes, packed)
        chosen[(m.rows, m.cols, m.tokens)] = kernel
        if progress is not None:
            progress(f"kernel {m.rows}x{m.cols} at {m.tokens} tokens")
        return took

    dec_s = sum(m.count * seconds(m) for m in workload.decode)
    pre_flops = sum(2 * m.count * m.tokens * m.rows * m.cols for m in workload.prefill)
    pre_s = sum(m.count * seconds(m) for m in workload.prefill)
    shapes = {(m.rows, m.cols, m.tokens, m.kernel) for m in workload.decode + workload.prefill}
    return Rates(dec_bytes / dec_s, pre_flops / pre_s, dec_s, pre_s, len(shapes),
                 tuple((*shape, kernel) for shape, kernel in sorted(chosen.items())))
