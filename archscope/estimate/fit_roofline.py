"""The roofline `archscope fit` times a prefill and a decode step with, per GPU, and the latency
terms a roofline leaves out.

A phase takes max(compute, memory) + latency + collective:
- compute = FLOPs on one GPU / (dense peak at the compute dtype x the achievable compute
  fraction); FLOPs (estimate/flops.py, the record's) are split evenly over the tp GPUs. A
  prefill's fraction follows its prompt length (hardware/latency.py: the measured GEMM curve,
  capped at the part's fraction; fp8 / fp4 tensor-core prefills a cited share of it);
- memory = bytes one GPU moves / (peak bandwidth x the achievable bandwidth fraction); the
  weights at the share of bf16's bandwidth their format's kernels reach (dequantizing GEMV);
- latency = the gaps between the step's kernels (about 15 a layer, replayed from a CUDA graph);
- collective = the collective bytes one GPU sends (estimate/parallel.py) / the link's one-way
  bandwidth (Hardware.one_way_bandwidth), plus each collective's own latency (an all-reduce
  per sublayer and the logits gather under tp; an expert-parallel dispatch and combine per MoE
  layer under ep).
Latency and collectives add, not overlap: every kernel of a step needs the one before it, and a
tensor-parallel layer waits for its all-reduce (gpt-fast's trace of an eager decode shows the
GPU idle between kernels; vLLM's profile of a CUDA-graph decode step of Llama-3-8B on H100
spends 4.24 ms, of which the GEMMs 1.44 ms: achievable.yaml, latency_facts.yaml). The values,
each cited, are in hardware/achievable.yaml; the measured local CPU takes none of them (its
probe times the model's own kernels).
Prefill (time to first token) of a prompt of `context` tokens, batch 1: the record's causal
prefill FLOPs with the lm_head for the last position only (no other logits are asked for);
bytes = the weights a forward over the prompt reads + the cache it writes.
Decode step (time per output token) at `batch` sequences each at `context`: batch x the
record's decode FLOPs; bytes = the weights read for `batch` tokens (MoE: the expected distinct
experts, ParallelSplit.weights_read_bytes) + every sequence's KV cache and state read once.
The compute dtype is the format's when the part has tensor cores for it (fp8 formats on fp8
parts, nvfp4 / mxfp4 on fp4 parts: W8A8 / W4A4 kernels), else bf16 (weight-only formats
dequantise to bf16: int8, int4, GGUF), fp16 and fp32 their own.
Left out: the engine's scheduling between steps, activation traffic, the attention kernel
re-reading K/V, overlap of communication with compute, speculative decoding, MTP, prefix
caching and chunked-prefill interference.
"""

from __future__ import annotations

from dataclasses import dataclass

from archscope.errors import InputError
from archscope.estimate.parallel import ParallelSplit
from archscope.hardware import Hardware
from archscope.hardware.achievable import Achievable
from archscope.hardware.latency import Latency, format_bandwidth, latency, prefill_compute

# Preferred compute dtypes per weight format, first available on the part wins.
_COMPUTE = {"fp8": ("fp8", "bf16"), "fp8-block": ("fp8", "bf16"),
            "nvfp4": ("fp4", "bf16"), "mxfp4": ("fp4", "bf16"), "mxfp4-experts": ("fp4", "bf16"),
            "fp16": ("fp16", "bf16"), "fp32": ("fp32",)}


def compute_dtype(weight_format: str, hw: Hardware) -> str:
    """The dtype whose peak the compute term uses (see the module doc)."""
    for dtype in _COMPUTE.get(weight_format, ("bf16", "fp32")):
        if hw.flops(dtype):
            return dtype
    raise InputError(f"{hw.name} has no dense peak for {weight_format} weights "
                     f"(it has {', '.join(hw.peak_flops) or 'none'})")


@dataclass(frozen=True)
class Phase:
    """One phase's roofline on one GPU."""

    flops: float  # on one GPU
    bytes: float  # moved by one GPU
    collective_bytes: float  # sent by one GPU
    compute_s: float
    memory_s: float
    interconnect_s: float  # the collective bytes over the link
    latency_s: float = 0.0  # the gaps between the step's kernels
    collective_latency_s: float = 0.0  # each collective's own latency, summed

    @property
    def collective_s(self) -> float:
        return self.interconnect_s + self.collective_latency_s

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.latency_s + self.collective_s

    @property
    def bound(self) -> str:
        """The largest term: compute, memory, latency (kernel gaps) or collective."""
        terms = {"compute": self.compute_s, "memory": self.memory_s, "latency": self.latency_s,
                 "collective": self.collective_s}
        return max(terms, key=terms.get)


@dataclass(frozen=True)
class Rates:
    """The achieved rates a phase is priced at: peaks x achievable fractions."""

    flops_per_s: float
    bytes_per_s: float
    link_bytes_per_s: float  # one way; 0 without a link
    dtype: str
    weights_bytes_per_s: float = 0.0  # the weights' reads: bytes_per_s x the format's share
    latency: Latency | None = None  # None: the measured CPU (its probe times real kernels)
    link: str = ""  # the interconnect's kind
    peak_flops_per_s: float = 0.0  # dense peak at dtype (a prefill's fraction scales it)
    compute_fraction: float = 1.0

    def prefill_flops_per_s(self, tokens: int) -> float:
        if self.latency is None:
            return self.flops_per_s
        return self.peak_flops_per_s * prefill_compute(tokens, self.compute_fraction,
                                                       self.dtype in ("fp8", "fp4"))


def rates(hw: Hardware, weight_format: str, fractions: Achievable) -> Rates:
    dtype = compute_dtype(weight_format, hw)
    bandwidth = hw.memory_bandwidth * fractions.bandwidth
    gpu = not hw.measured
    return Rates(hw.flops(dtype) * fractions.compute, bandwidth, hw.one_way_bandwidth, dtype,
                 bandwidth * (format_bandwidth(weight_format) if gpu else 1.0),
                 latency() if gpu else None, hw.interconnect, hw.flops(dtype),
                 fractions.compute)


def _phase(flops: float, flops_per_s: float, weights: float, other: float, sent: float,
           split: ParallelSplit, r: Rates) -> Phase:
    """`weights` and `other` bytes moved (the weights at their format's bandwidth)."""
    if sent and not r.link_bytes_per_s:
        raise InputError("this part has no GPU-to-GPU link in the catalog: use --tp 1 --ep 1")
    lat = r.latency
    gaps = lat.launch_s(split.n_layers) if lat else 0.0
    waits = (split.collectives_per_step * lat.collective(r.link)
             + split.dispatched_layers * lat.moe_dispatch_combine_s) if lat else 0.0
    return Phase(flops, weights + other, sent, flops / flops_per_s,
                 weights / (r.weights_bytes_per_s or r.bytes_per_s) + other / r.bytes_per_s,
                 sent / r.link_bytes_per_s if sent else 0.0, gaps, waits)


def prefill(at, split: ParallelSplit, kv_bytes: int, state_bytes: int, r: Rates) -> Phase:
    """The prompt of at.seq_len tokens, one sequence (`at`: the record's AtContext, batch 1;
    kv_bytes / state_bytes: one sequence's cache on one GPU)."""
    n = at.seq_len
    lm_head = at.prefill.by_component.get("lm_head", 0)
    flops = (at.prefill.total - lm_head + lm_head / n) / split.tp
    sent = n * split.collective_bytes_per_token + split.logits_gather_bytes_per_token
    return _phase(flops, r.prefill_flops_per_s(n), split.weights_read_bytes(n),
                  kv_bytes + state_bytes, sent, split, r)


def decode(at, split: ParallelSplit, batch: int, kv_bytes: int, state_bytes: int,
           r: Rates) -> Phase:
    """One step of `batch` sequences at context at.seq_len (kv_bytes / state_bytes: one
    sequence's cache on one GPU, read once per step)."""
    flops = batch * at.decode.total / split.tp
    sent = batch * (split.collective_bytes_per_token + split.logits_gather_bytes_per_token)
    return _phase(flops, r.flops_per_s, split.weights_read_bytes(batch),
                  batch * (kv_bytes + state_bytes), sent, split, r)
