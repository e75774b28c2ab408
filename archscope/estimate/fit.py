"""Will it fit, how long a context, how many sequences, how fast: one deployment's answer.

`fit(spec, hw, setup)` puts a model on `setup.n_gpus` GPUs of one kind: tensor-parallel groups
of `tp` GPUs (routed experts in `ep` groups, estimate/parallel.py), `n_gpus / tp` replicas.
Conventions (each also in the result, `FitResult.row()`):
- weights per GPU: every tensor's shard priced in the weight format (estimate/formats.py);
- usable memory per GPU = memory x gpu_memory_utilization (default 0.9, vLLM's default
  --gpu-memory-utilization); the rest is the reserve for activations, workspace and the
  runtime's own allocations. `engine="vllm"` also takes out of that share what vLLM keeps
  there: its profiling forward's activation peak (max_batched_tokens tokens) and the memory
  torch does not allocate (hardware/achievable.yaml `engines`). The cache gets what the
  weights leave of the usable memory;
- cache per sequence: the KV cache at the context (kv_cache(): sliding-window and chunked
  layers hold at most their span) on one GPU, paged in blocks of 16 tokens per layer (vLLM's
  default --block-size; the last block of each layer rounds up), plus the state mixers'
  constant state (estimate/state.py), split by tp;
- max_context: the longest context (at most the model's max_seq_len) whose cache fits one
  sequence, batch 1; max_concurrent_sequences: whole sequences at the context that fit, in
  every replica;
- speed: estimate/fit_roofline.py, at achievable fractions of the catalog's peaks
  (hardware/achievable.yaml, each cited; overridable).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from archscope.errors import InputError
from archscope.estimate import fit_roofline as roof
from archscope.estimate.fit_advice import Advice, advice
from archscope.estimate.formats import weight_format
from archscope.estimate.kv_cache import kv_cache
from archscope.estimate.memory import activation_bytes, compute_dtype
from archscope.estimate.parallel import ParallelSplit, split
from archscope.estimate.record import AtContext, model_record
from archscope.hardware import Hardware
from archscope.hardware.achievable import Achievable, achievable
from archscope.hardware.latency import EngineMemory, engine_memory
from archscope.spec import ModelSpec
from archscope.spec.weight_formats import checkpoint_format

BLOCK_TOKENS = 16  # vLLM's default KV block size (--block-size 16)
DEFAULT_UTILIZATION = 0.9  # vLLM's default --gpu-memory-utilization
DEFAULT_CONTEXT = 8192
ENGINES = ("raw", "vllm")  # hardware/latency.py engine_memory: what each reserves


@dataclass(frozen=True)
class Setup:
    """What the user asks: a weight format and cache dtype on n_gpus of one part."""

    n_gpus: int = 1
    tp: int | None = None  # None: all n_gpus in one tensor-parallel group
    ep: int = 1
    weight_format: str | None = None  # None: the checkpoint's (spec.weight_format), else bf16
    kv_dtype: str | None = None  # None: the compute dtype (bf16; fp16/fp32 weights: theirs)
    context: int | None = None  # None: 8,192 or the model's max_seq_len when shorter
    batch: int = 1
    gpu_memory_utilization: float = DEFAULT_UTILIZATION
    bandwidth_fraction: float | None = None  # None: hardware/achievable.yaml's
    compute_fraction: float | None = None
    engine: str = "raw"  # raw | vllm: what the engine reserves inside its memory share
    max_batched_tokens: int | None = None  # vllm's profiling forward (None: its default)


@dataclass(frozen=True)
class FitResult:
    model: str
    hardware: Hardware
    setup: Setup  # resolved: tp, kv_dtype and context filled in
    split: ParallelSplit
    fractions: Achievable
    rates: roof.Rates
    usable_bytes_per_gpu: int
    kv_bytes_per_sequence: int  # one GPU, paged
    state_bytes_per_sequence: int  # one GPU
    model_cache_bytes_per_sequence: int  # the whole model's (the record's), unpaged
    max_context: int
    max_context_limit: str  # 'memory' or 'model' (max_seq_len reached)
    kv_block_bytes_per_gpu: int  # one 16-token block of every attention layer, one GPU
    reserve: EngineMemory  # the engine's own reserve inside the share (raw: none)
    activation_reserve_bytes: int  # its profiling forward's activation peak
    prefill: roof.Phase
    decode: roof.Phase
    # what would load instead, when this setup cannot (fit_advice.py); None when it fits or
    # the part is the measured local CPU
    advice: Advice | None = None

    @property
    def replicas(self) -> int:
        return self.setup.n_gpus // self.setup.tp

    @property
    def cache_bytes_per_sequence(self) -> int:
        return self.kv_bytes_per_sequence + self.state_bytes_per_sequence

    @property
    def cache_budget_bytes_per_gpu(self) -> int:
        return max(0, self.usable_bytes_per_gpu - self.split.weights_bytes_per_gpu)

    @property
    def weights_fit(self) -> bool:
        return self.split.weights_bytes_per_gpu <= self.usable_bytes_per_gpu

    @property
    def sequences_per_replica(self) -> int:
        per = self.cache_bytes_per_sequence
        return self.cache_budget_bytes_per_gpu // per if per else 0

    @property
    def max_concurrent_sequences(self) -> int:
        return self.sequences_per_replica * self.replicas

    @property
    def fits(self) -> bool:
        return self.weights_fit and self.sequences_per_replica >= self.setup.batch

    @property
    def kv_capacity_tokens(self) -> int:
        """Tokens of KV cache the budget holds, in whole 16-token blocks over every layer (vLLM
        logs this as its KV cache size); 0 for a model without attention."""
        block = self.kv_block_bytes_per_gpu
        return self.cache_budget_bytes_per_gpu // block * BLOCK_TOKENS if block else 0

    @property
    def decode_tokens_per_s(self) -> float:
        """Tokens/s of all replicas, each decoding `batch` sequences."""
        return self.setup.batch * self.replicas / self.decode.seconds

    def row(self) -> dict:
        from archscope.estimate.fit_row import fit_row

        return fit_row(self)


def resolve(spec: ModelSpec, setup: Setup) -> Setup:
    """The setup with its defaults filled in and checked (InputError names the option)."""
    s = setup
    for name, value in (("--n-gpus", s.n_gpus), ("--ep", s.ep), ("--batch", s.batch)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    tp = s.tp if s.tp is not None else s.n_gpus
    if not isinstance(tp, int) or tp < 1 or s.n_gpus % tp:
        raise InputError(f"--tp {tp} must divide --n-gpus {s.n_gpus} (the GPUs are --n-gpus / "
                         f"--tp replicas of a --tp group)")
    if s.engine not in ENGINES:
        raise InputError(f"--engine {s.engine!r}: expected {' or '.join(ENGINES)}")
    if not 0 < s.gpu_memory_utilization <= 1:
        raise InputError(f"--gpu-memory-utilization must be in (0, 1], got "
                         f"{s.gpu_memory_utilization}")
    fmt = weight_format(s.weight_format or checkpoint_format(spec)).name
    kv = s.kv_dtype or compute_dtype(fmt)
    context = s.context or min(DEFAULT_CONTEXT, spec.max_seq_len)
    if context < 1:
        raise InputError(f"--context must be a positive integer, got {context}")
    return replace(s, tp=tp, weight_format=fmt, kv_dtype=kv, context=context)


def sequence_bytes(spec: ModelSpec, sp: ParallelSplit, context: int, kv_dtype: str,
                   state_bytes: int, block: int = BLOCK_TOKENS) -> tuple[int, int]:
    """(KV, state) bytes one sequence at `context` holds on one GPU (KV paged in `block`s)."""
    kv = sp.kv_bytes_per_gpu(kv_cache(spec, context, 1, kv_dtype), block)
    return kv, -(-state_bytes // sp.tp)  # state split by heads: 1 / tp each, rounded up


def longest_context(spec: ModelSpec, sp: ParallelSplit, kv_dtype: str, state: int,
                    budget: int) -> tuple[int, str]:
    """The longest context <= max_seq_len whose paged cache fits `budget` (0 if none does)."""
    def need(n: int) -> int:
        return sum(sequence_bytes(spec, sp, n, kv_dtype, state))

    if need(spec.max_seq_len) <= budget:
        return spec.max_seq_len, "model"
    lo, hi = 0, spec.max_seq_len  # need(lo) fits (or lo = 0), need(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if need(mid) <= budget else (lo, mid)
    return lo, "memory"


def fit(spec: ModelSpec, hw: Hardware, setup: Setup = Setup(), advise: bool = True) -> FitResult:
    """The answer for one setup (see the module doc); one that cannot load also says what would
    (`advise`)."""
    s = resolve(spec, setup)
    result = _fit(spec, hw, s)
    if advise and not result.fits and not hw.measured:
        result = replace(result, advice=advice(
            spec, hw, s, lambda other: _fit(spec, hw, resolve(spec, other)).fits))
    return result


def _fit(spec: ModelSpec, hw: Hardware, s: Setup) -> FitResult:
    if hw.measured:  # the local CPU: priced at this model's own kernels, not a generic probe
        hw = _local_cpu(spec, hw, s)
    sp = split(spec, s.tp, s.ep, s.weight_format)
    at: AtContext = model_record(spec, s.context, batch=1, weight_format=s.weight_format,
                                 cache_dtype=s.kv_dtype).at(s.context)
    fractions = achievable(hw.name).overridden(s.bandwidth_fraction, s.compute_fraction)
    r = roof.rates(hw, s.weight_format, fractions)
    reserve = engine_memory(s.engine, hw.memory_bytes, hw.name, s.max_batched_tokens)
    activations = activation_bytes(spec, reserve.max_batched_tokens, 1,
                                   compute_dtype(s.weight_format)) if reserve.max_batched_tokens else 0
    usable = max(0, int(hw.memory_bytes * s.gpu_memory_utilization) - activations
                 - reserve.non_torch_bytes)
    kv, state = sequence_bytes(spec, sp, s.context, s.kv_dtype, at.state_bytes)
    budget = max(0, usable - sp.weights_bytes_per_gpu)
    longest, limit = longest_context(spec, sp, s.kv_dtype, at.state_bytes, budget)
    kv_exact, _ = sequence_bytes(spec, sp, s.context, s.kv_dtype, at.state_bytes, block=1)
    return FitResult(
        model=spec.name, hardware=hw, setup=s, split=sp, fractions=fractions, rates=r,
        usable_bytes_per_gpu=usable, kv_bytes_per_sequence=kv, state_bytes_per_sequence=state,
        model_cache_bytes_per_sequence=at.cache_bytes, max_context=longest,
        max_context_limit=limit,
        kv_block_bytes_per_gpu=sp.kv_bytes_per_gpu(kv_cache(spec, BLOCK_TOKENS, 1, s.kv_dtype)),
        reserve=reserve, activation_reserve_bytes=activations,
        prefill=roof.prefill(at, sp, kv_exact, state, r),
        decode=roof.decode(at, sp, s.batch, kv_exact, state, r))


def _local_cpu(spec: ModelSpec, hw: Hardware, s: Setup) -> Hardware:
    """`hw` (the probed CPU) re-priced at the decode step of `s.batch` sequences and the
    prefill of `s.context` tokens that this setup runs (hardware/kernels.py)."""
    from archscope.estimate.kernel_shapes import workload
    from archscope.hardware.probe import probe_workload

    dtype = roof.compute_dtype(s.weight_format, hw)
    return probe_workload(workload(spec, dtype, s.batch, s.context, prefill_batch=1,
                                   weight_format=s.weight_format))


def min_gpus(spec: ModelSpec, parts: list[Hardware], formats: list[str], context: int,
             counts=(1, 2, 4, 8), utilization: float = DEFAULT_UTILIZATION) -> dict:
    """{(part name, format): the fewest GPUs, tensor-parallel over all of them, that hold `spec`
    in that format with one sequence at `context`, or None when no count in `counts` does (or
    none divides the model)}. Each split is priced once and read against every part."""
    state = model_record(spec, 1).at(1).state_bytes
    out = {}
    for fmt in formats:
        kv_dtype = compute_dtype(fmt)
        needs = []  # (n, weights per GPU, one sequence's cache per GPU)
        for n in counts:
            try:
                sp = split(spec, n, 1, fmt)
            except InputError:
                continue
            needs.append((n, sp.weights_bytes_per_gpu,
                          sum(sequence_bytes(spec, sp, context, kv_dtype, state))))
        for hw in parts:
            usable = int(hw.memory_bytes * utilization)
            out[(hw.name, fmt)] = next((n for n, w, c in needs if w + c <= usable), None)
    return out
