"""The roofline `archscope fit` times a prefill and a decode step with, per GPU.

A phase takes max(compute, memory) + interconnect:
- compute = FLOPs on one GPU / (dense peak at the compute dtype x the achievable compute
  fraction); FLOPs (estimate/flops.py, the record's) are split evenly over the tp GPUs;
- memory = bytes one GPU moves / (peak bandwidth x the achievable bandwidth fraction);
- interconnect = the collective bytes one GPU sends (estimate/parallel.py) / the link's
  one-way bandwidth (Hardware.one_way_bandwidth), added, not overlapped: a tensor-parallel
  layer waits for its all-reduce.
Prefill (time to first token) of a prompt of `context` tokens, batch 1: the record's causal
prefill FLOPs with the lm_head for the last position only (no other logits are asked for);
bytes = the weights a forward over the prompt reads + the cache it writes.
Decode step (time per output token) at `batch` sequences each at `context`: batch x the
record's decode FLOPs; bytes = the weights read for `batch` tokens (MoE: the expected distinct
experts, ParallelSplit.weights_read_bytes) + every sequence's KV cache and state read once.
The compute dtype is the format's when the part has tensor cores for it (fp8 formats on fp8
parts, nvfp4 / mxfp4 on fp4 parts: W8A8 / W4A4 kernels), else bf16 (weight-only formats
dequantise to bf16: int8, int4, GGUF), fp16 and fp32 their own.
Left out: kernel launch and scheduling overhead, activation traffic, the attention kernel
re-reading K/V, overlap of communication with compute.
"""

from __future__ import annotations

from dataclasses import dataclass

from archscope.errors import InputError
from archscope.estimate.parallel import ParallelSplit
from archscope.hardware import Hardware
from archscope.hardware.achievable import Achievable

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
    interconnect_s: float

    @property
    def seconds(self) -> float:
        return max(self.compute_s, self.memory_s) + self.interconnect_s

    @property
    def bound(self) -> str:
        """What decides the time: compute, memory, or the interconnect when it outweighs both."""
        if self.interconnect_s > max(self.compute_s, self.memory_s):
            return "interconnect"
        return "compute" if self.compute_s >= self.memory_s else "memory"


@dataclass(frozen=True)
class Rates:
    """The achieved rates a phase is priced at: peaks x achievable fractions."""

    flops_per_s: float
    bytes_per_s: float
    link_bytes_per_s: float  # one way; 0 without a link
    dtype: str


def rates(hw: Hardware, weight_format: str, fractions: Achievable) -> Rates:
    dtype = compute_dtype(weight_format, hw)
    return Rates(hw.flops(dtype) * fractions.compute, hw.memory_bandwidth * fractions.bandwidth,
                 hw.one_way_bandwidth, dtype)


def _phase(flops: float, moved: float, sent: float, r: Rates) -> Phase:
    if sent and not r.link_bytes_per_s:
        raise InputError("this part has no GPU-to-GPU link in the catalog: use --tp 1 --ep 1")
    return Phase(flops, moved, sent, flops / r.flops_per_s, moved / r.bytes_per_s,
                 sent / r.link_bytes_per_s if sent else 0.0)


def prefill(at, split: ParallelSplit, kv_bytes: int, state_bytes: int, r: Rates) -> Phase:
    """The prompt of at.seq_len tokens, one sequence (`at`: the record's AtContext, batch 1;
    kv_bytes / state_bytes: one sequence's cache on one GPU)."""
    n = at.seq_len
    lm_head = at.prefill.by_component.get("lm_head", 0)
    flops = (at.prefill.total - lm_head + lm_head / n) / split.tp
    moved = split.weights_read_bytes(n) + kv_bytes + state_bytes
    sent = n * split.collective_bytes_per_token + split.logits_gather_bytes_per_token
    return _phase(flops, moved, sent, r)


def decode(at, split: ParallelSplit, batch: int, kv_bytes: int, state_bytes: int,
           r: Rates) -> Phase:
    """One step of `batch` sequences at context at.seq_len (kv_bytes / state_bytes: one
    sequence's cache on one GPU, read once per step)."""
    flops = batch * at.decode.total / split.tp
    moved = split.weights_read_bytes(batch) + batch * (kv_bytes + state_bytes)
    sent = batch * (split.collective_bytes_per_token + split.logits_gather_bytes_per_token)
    return _phase(flops, moved, sent, r)
