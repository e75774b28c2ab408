"""How long `archscope compare` over every preset takes, beside building the same models with
transformers on the meta device and counting their parameters (the usual way to get the number).

Both are measured in this one run, on this machine, as the median of several runs: a fresh
`archscope compare` process (start-up and imports included), and in-process HF meta builds
(transformers and torch already imported, which favours transformers).

    python benchmarks/compare_speed.py [--runs 5] [--json PATH]
    python benchmarks/compare_speed.py --json reports/data/benchmarks/compare_speed-cpu.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from common import cpu_name, write_json  # benchmarks/common.py, beside this script


def time_compare(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "archscope.cli", "compare"], check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def time_hf_meta(runs: int) -> list[float]:
    import torch
    import transformers

    from archscope.spec import load_spec, preset_names
    from archscope.spec.hf import spec_to_hf_config

    configs = [transformers.AutoConfig.for_model(**spec_to_hf_config(load_spec(name)))
               for name in preset_names()]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for config in configs:
            with torch.device("meta"):
                model = transformers.AutoModelForCausalLM.from_config(config)
            sum(p.numel() for p in model.parameters())
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    ours = time_compare(args.runs)
    hf = time_hf_meta(max(1, args.runs // 2))
    o, h = statistics.median(ours), statistics.median(hf)
    print(f"archscope compare, all presets (fresh process): median {o:.3f} s "
          f"(min {min(ours):.3f}, max {max(ours):.3f}, {len(ours)} runs)")
    print(f"transformers meta build + count, same presets:  median {h:.3f} s "
          f"(min {min(hf):.3f}, max {max(hf):.3f}, {len(hf)} runs)")
    print(f"ratio transformers / archscope: {h / o:.1f}x; target archscope < 1 s: "
          f"{'met' if o < 1 else 'NOT met'}")
    if args.json:
        from archscope.spec import preset_names

        write_json(args.json, {
            "what": "a fresh `archscope compare` process over every preset beside transformers' "
                    "meta-device builds of the same models, medians of runs "
                    "(benchmarks/compare_speed.py)",
            "cpu": cpu_name(), "cores": os.cpu_count(),
            "models": len(preset_names()),
            "archscope_compare_s": {"median": o, "min": min(ours), "max": max(ours),
                                    "runs": len(ours)},
            "transformers_meta_s": {"median": h, "min": min(hf), "max": max(hf),
                                    "runs": len(hf)},
            "ratio": h / o})


if __name__ == "__main__":
    main()
