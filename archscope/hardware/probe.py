"""The local CPU, measured on the spot: what `--gpu cpu` and `archscope hardware --probe-cpu` use.

A CPU has no datasheet figure archscope could cite for this machine (the core count, clocks and
memory channels vary), so it is measured instead, in about a second:
- memory bandwidth: the best of a few copies of a 128 MiB fp32 tensor into another (each copy
  reads and writes it: 2 x 128 MiB moved), larger than a CPU core's last-level cache;
- matmul FLOP/s: the best of a few torch.matmul calls on square matrices (2 n^3 FLOPs each), in
  fp32 (n = 1024) and bf16 (n = 256: CPUs without bf16 units run it tens of times slower).
These are achieved rates, not peaks: a roofline on them needs no extra "achievable fraction".
The result is cached for the process, so one command measures once and prints what it used.

A roofline for one model on this CPU uses `probe_workload` instead: the same record with the
bandwidth and FLOP/s that model's own kernels reach (archscope/hardware/kernels.py), since
neither a copy nor a square matmul runs at the speed of a decode step's matrix-vector products
or a prefill's prompt-shaped matmuls.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import replace
from functools import lru_cache

from archscope.hardware import kernels
from archscope.hardware.catalog import Hardware

COPY_MIB = 128
MATMUL_N = {"fp32": 1024, "bf16": 256}
BUDGET_S = 0.3  # per measurement: three of them keep the probe near one second
MAX_REPS = 5


def _best(fn, budget: float = BUDGET_S, reps: int = MAX_REPS) -> float:
    """The fastest of up to `reps` timed calls after one warm-up, stopping once `budget` is
    spent (a slow machine gets fewer repeats, never a longer probe)."""
    fn()
    best, start = float("inf"), time.perf_counter()
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        if time.perf_counter() - start > budget:
            break
    return best


def _memory_bytes() -> int:
    """Installed memory: psutil when present, else the POSIX page count."""
    try:
        import psutil

        return int(psutil.virtual_memory().total)
    except ImportError:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


@lru_cache(maxsize=1)
def probe_cpu() -> Hardware:
    """This machine's CPU as a Hardware record: measured bandwidth and matmul rates."""
    import torch

    n = COPY_MIB * 2**20 // 4
    src, dst = torch.ones(n), torch.empty(n)
    copy_s = _best(lambda: dst.copy_(src))
    del src, dst
    flops = {}
    for dtype, size in MATMUL_N.items():
        a = torch.randn(size, size).to(getattr(torch, "float32" if dtype == "fp32" else "bfloat16"))
        flops[dtype] = 2 * size**3 / _best(lambda: torch.matmul(a, a))
    threads = torch.get_num_threads()
    return Hardware(
        name="cpu", title=f"{_cpu_name()} ({threads} threads, measured)", vendor="local",
        memory_bytes=_memory_bytes(), memory_bandwidth=2 * n * 4 / copy_s, peak_flops=flops,
        interconnect="none", interconnect_bandwidth=0.0,
        source_title="measured on this machine by archscope.hardware.probe", source_url="",
        notes=(f"best of a few {COPY_MIB} MiB fp32 copies and torch.matmul "
               f"{MATMUL_N['fp32']}^3 fp32 / {MATMUL_N['bf16']}^3 bf16 on {threads} threads; "
               "achieved rates, not peaks"),
        measured=True)


def probe_workload(workload: kernels.Workload) -> Hardware:
    """The local CPU priced for one model: `probe_cpu`'s record with the decode bandwidth and
    prefill FLOP/s of that model's own matmuls (kernels.measure), in the workload's dtype."""
    import torch

    rates = kernels.measure(workload)
    return replace(
        probe_cpu(), memory_bandwidth=rates.decode_bytes_per_s,
        peak_flops={workload.dtype: rates.prefill_flops_per_s},
        notes=(f"this model's kernels, measured: {workload.dtype} matrix-vector products of "
               f"one decode step ({1e3 * rates.decode_seconds:.1f} ms) and matmuls of one "
               f"prefill ({1e3 * rates.prefill_seconds:.1f} ms) over {rates.shapes} weight "
               f"shapes on {torch.get_num_threads()} threads; achieved "
               "rates, not peaks"))
