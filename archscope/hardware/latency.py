"""What a roofline leaves out, read from achievable.yaml (each value cited there): the gaps
between a step's kernels, the latency of each collective, the bandwidth each weight format's
decode kernels reach beside bf16's, and the compute a prefill reaches at its prompt length.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import lru_cache

import yaml

from archscope.hardware.achievable import ACHIEVABLE_FILE


@dataclass(frozen=True)
class Latency:
    kernels_per_layer: int
    kernel_s: float  # per kernel replayed from a CUDA graph
    step_s: float  # per graph replay (one step)
    collective_s: dict  # link kind ('NVLink', 'PCIe') -> one small all-reduce
    moe_dispatch_combine_s: float  # one MoE layer's expert-parallel dispatch + combine

    def launch_s(self, n_layers: int) -> float:
        """The kernel gaps of one step through `n_layers` layers."""
        return self.step_s + n_layers * self.kernels_per_layer * self.kernel_s

    def collective(self, link: str) -> float:
        """One collective's latency over `link` (a catalog interconnect kind: 'NVLink',
        'PCIe Gen5 x16', 'Infinity Fabric'): PCIe for a PCIe link, else NVLink's."""
        return self.collective_s["PCIe" if link.startswith("PCIe") else "NVLink"]


@lru_cache(maxsize=1)
def _data() -> dict:
    return yaml.safe_load(ACHIEVABLE_FILE.read_text(encoding="utf-8"))


def latency() -> Latency:
    d = _data()["latency"]
    return Latency(int(d["kernels_per_layer"]), float(d["kernel_s"]), float(d["step_s"]),
                   {k: float(v) for k, v in d["collective_s"].items()},
                   float(d["moe_dispatch_combine_s"]))


def format_bandwidth(weight_format: str) -> float:
    """The share of bf16's achieved bandwidth a decode reading `weight_format` weights reaches
    (1 for the plain formats)."""
    entry = _data()["format_bandwidth"].get(weight_format)
    return float(entry["fraction"]) if entry else 1.0


def prefill_compute(tokens: int, cap: float, low_precision: bool) -> float:
    """The fraction of dense peak a prefill of `tokens` tokens reaches: the measured GEMM curve,
    interpolated linearly in log2(tokens) and flat beyond its ends, at most `cap` (the part's
    compute fraction); fp8 / fp4 tensor-core prefills reach `low_precision` of that."""
    d = _data()["prefill_compute"]
    points = [(float(n), float(f)) for n, f in d["by_tokens"]]
    xs = [n for n, _ in points]
    i = bisect_left(xs, tokens)
    if i == 0:
        fraction = points[0][1]
    elif i == len(points):
        fraction = points[-1][1]
    else:
        from math import log2

        (n0, f0), (n1, f1) = points[i - 1], points[i]
        fraction = f0 + (f1 - f0) * (log2(tokens) - log2(n0)) / (log2(n1) - log2(n0))
    fraction = min(cap, fraction)
    return fraction * float(d["low_precision"]) if low_precision else fraction


@dataclass(frozen=True)
class EngineMemory:
    """What an engine reserves inside its memory share besides weights and cache."""

    name: str
    max_batched_tokens: int  # its profiling forward's tokens (0: no profiling run)
    non_torch_bytes: int


def engine_memory(name: str, memory_bytes: int, gpu: str,
                  max_batched_tokens: int | None = None) -> EngineMemory:
    """`name`'s reserve on a GPU of `memory_bytes` called `gpu` ('raw': none)."""
    if name == "raw":
        return EngineMemory("raw", 0, 0)
    d = _data()["engines"][name]
    tokens = d["max_batched_tokens"]
    large = memory_bytes >= tokens["large_from_bytes"] and not gpu.startswith("a100")
    return EngineMemory(name, max_batched_tokens or int(tokens["large" if large else "other"]),
                        int(d["non_torch_bytes"]))
