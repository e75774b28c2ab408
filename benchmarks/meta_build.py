"""Build DeepSeek-V2 (236B parameters) on the meta device: how long it takes, and that it
allocates no parameter memory.

Reports the one-time costs apart (importing torch and archscope, the first build in the
process, which pays torch's lazy initialisation), then the median of several further builds.
Memory: the process's resident set size before and after the builds, set against what the
parameters would take if they were real, plus a check that every parameter is on `meta`.

Run: python benchmarks/meta_build.py [PRESET] [--runs N]    (target: under 2 s per build)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

T0 = time.perf_counter()
import torch  # noqa: E402

from archscope.nn import build_model, count_parameters  # noqa: E402
from archscope.spec import load_spec  # noqa: E402

IMPORT_S = time.perf_counter() - T0


def rss_bytes() -> int:
    """Current resident set size (Linux /proc; elsewhere the peak from getrusage)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def timed_build(spec) -> tuple[float, torch.nn.Module]:
    start = time.perf_counter()
    model = build_model(spec, device="meta")
    return time.perf_counter() - start, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("preset", nargs="?", default="deepseek-v2")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    spec = load_spec(args.preset)
    rss_before = rss_bytes()
    first_s, model = timed_build(spec)
    times = []
    for _ in range(args.runs):
        del model
        seconds, model = timed_build(spec)
        times.append(seconds)
    rss_after = rss_bytes()

    params = list(model.parameters())
    n_params = count_parameters(model)
    all_meta = all(p.device.type == "meta" for p in params)
    median = statistics.median(times)
    mib = 2 ** 20
    print(f"model: {spec.name} ({n_params:,} parameters, {len(params):,} tensors)")
    print(f"import torch + archscope: {IMPORT_S:.2f} s (once per process)")
    print(f"first build in process:   {first_s:.3f} s (includes torch's lazy initialisation)")
    print(f"build, median of {len(times)}:      {median:.3f} s "
          f"(min {min(times):.3f}, max {max(times):.3f})  target < 2 s: "
          f"{'ok' if median < 2 else 'MISSED'}")
    print(f"every parameter on meta:  {all_meta}")
    print(f"RSS before/after builds:  {rss_before / mib:,.0f} MiB -> {rss_after / mib:,.0f} MiB "
          f"(+{(rss_after - rss_before) / mib:,.1f} MiB)")
    print(f"parameters if real (bf16): {n_params * 2 / mib:,.0f} MiB")
    if not all_meta:
        raise SystemExit("some parameters were materialised")


if __name__ == "__main__":
    main()
