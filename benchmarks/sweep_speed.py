"""`archscope sweep`'s variants per second, beside `compare`'s models per second, in one run.

Both in-process (imports done), the median of several runs: the sweep over a grid of
llama-3.2-1b what-ifs (attention.n_kv_heads x n_layers x ffn.d_ff x d_model, 1,200 variants,
each validated and recorded; another --model's invalid combinations would be counted too, each
having been validated), and `compare`'s work for
every preset (load the spec, build its record, take its row). A sweep's variant skips the file
read and YAML parse a compare model pays for; both pay validation and the record.

    python benchmarks/sweep_speed.py [--runs 3] [--model llama-3.2-1b] [--json PATH]
    python benchmarks/sweep_speed.py --json reports/data/benchmarks/sweep_speed-cpu.json
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from archscope.estimate import model_record
from archscope.estimate.sweep import parse_grid, sweep
from archscope.spec import load_spec, preset_names

from common import cpu_name, write_json  # benchmarks/common.py, beside this script

GRID = ("attention.n_kv_heads=1,2,4,8,16,32", "n_layers=8,12,16,20,24,28,32,40",
        "ffn.d_ff=4096,6144,8192,11008,14336", "d_model=1024,2048,3072,4096,5120")


def time_sweep(model: str, runs: int) -> tuple[int, int, float]:
    spec, axes = load_spec(model), parse_grid(GRID)
    sweep(spec, axes[:1])  # warm caches (type hints, layer parts) as a real sweep would
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = sweep(spec, axes)
        times.append(time.perf_counter() - start)
    return len(result.rows), len(result.invalid), statistics.median(times)


def time_compare(runs: int) -> tuple[int, float]:
    names = preset_names()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for name in names:
            model_record(load_spec(name), 4096).row()
        times.append(time.perf_counter() - start)
    return len(names), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default="llama-3.2-1b")
    parser.add_argument("--json", default=None, help="also write the results to this file")
    args = parser.parse_args()
    valid, invalid, swept = time_sweep(args.model, args.runs)
    models, compared = time_compare(args.runs)
    sweep_rate, compare_rate = (valid + invalid) / swept, models / compared
    print(f"sweep {args.model}: {valid + invalid:,} variants ({valid:,} valid, {invalid:,} "
          f"invalid) in {swept:.2f} s = {sweep_rate:,.0f} variants/s")
    print(f"compare, every preset: {models} models in {compared:.2f} s = "
          f"{compare_rate:,.0f} models/s")
    print(f"ratio sweep/compare per variant: {sweep_rate / compare_rate:.2f}x "
          f"(median of {args.runs} runs each)")
    if args.json:
        write_json(args.json, {
            "what": "archscope sweep's variants per second beside compare's models per second, "
                    "in process, medians of runs (benchmarks/sweep_speed.py)",
            "cpu": cpu_name(), "cores": os.cpu_count(),
            "runs": args.runs, "model": args.model, "grid": list(GRID),
            "sweep": {"variants": valid + invalid, "valid": valid, "invalid": invalid,
                      "seconds": swept, "variants_per_s": sweep_rate},
            "compare": {"models": models, "seconds": compared, "models_per_s": compare_rate}})


if __name__ == "__main__":
    main()
