"""Linears on the CPU: F.linear against what archscope runs, side by side at a model's own weight
shapes: in fp32 (--dtype fp32) MKL's sgemm against archscope's linear (oneDNN's kernel,
archscope.nn.linear); in bf16 (--dtype bf16) the plain weight against its packed copy
(archscope.nn.linear.pack_weights, what `profile --pack-weights` runs).

For each phase (a decode step of --batch tokens, a prefill of --prompt tokens) the matmuls are
those archscope's kernel probe prices the model by (archscope.estimate.kernel_shapes: every
distinct weight shape with the tokens the phase feeds it, the head on the last position only
in a prefill). Each shape is timed with both kernels in alternation, the fastest of --calls
each, under inference mode as the model runs; a decode-sized product cycles through copies of
its matrix that together outgrow the caches (a decode step reads every weight from memory).
Printed per shape: both times, the GB/s of weights each reaches, and the ratio F.linear /
archscope (> 1: archscope's is faster); per phase, the same for the phase's whole set of
matmuls (each shape times how many the phase runs).

    python benchmarks/cpu_linear.py             # llama-3.2-1b: decode b1 and b8, prefill 128
    python benchmarks/cpu_linear.py --dtype bf16 --json reports/data/benchmarks/cpu_linear-cpu-bf16.json
    python benchmarks/cpu_linear.py --model qwen3-8b --json /tmp/cpu_linear.json
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from archscope.estimate.kernel_shapes import workload
from archscope.hardware.kernels import FLUSH_BYTES, REUSED_TOKENS
from archscope.nn.linear import linear, packed_layer, uses_onednn
from archscope.spec import load_spec

from common import cpu_name, fastest, write_json  # benchmarks/common.py, beside this script


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="llama-3.2-1b")
    p.add_argument("--batch", type=int, action="append", default=None,
                   help="decode batch (repeatable; default 1 and 8)")
    p.add_argument("--prompt", type=int, default=128, help="prefill tokens")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                   help="fp32: F.linear against archscope's linear; bf16: plain weights against "
                        "packed ones")
    p.add_argument("--calls", type=int, default=7, help="timed calls per kernel and shape")
    p.add_argument("--json", default=None, help="also write the results to this file")
    a = p.parse_args()
    a.batch = a.batch or [1, 8]
    return a


def time_shape(rows: int, cols: int, tokens: int, calls: int, dtype=torch.float32) -> dict:
    """Both kernels at one shape: seconds of one product each (fastest of `calls`)."""
    nbytes = rows * cols * dtype.itemsize
    # as the kernel probe does: copies that outgrow the caches, one from REUSED_TOKENS rows
    copies = 1 if tokens >= REUSED_TOKENS else max(1, -(-FLUSH_BYTES // nbytes))
    weights = [torch.randn(rows, cols).to(dtype) for _ in range(copies)]
    x = torch.randn(tokens, cols).to(dtype)
    if dtype == torch.float32:
        kernels = {"F.linear": F.linear, "archscope": linear}
    else:  # F.linear is oneDNN's already: the plain weight against the packed one
        packed = {id(w): packed_layer(w) for w in weights}
        kernels = {"F.linear": F.linear, "archscope": lambda x, w: packed[id(w)](x)}
    best = dict.fromkeys(kernels, float("inf"))
    with torch.inference_mode():
        onednn = uses_onednn(x, weights[0]) or dtype != torch.float32
        for _ in range(calls):  # alternating, so a drift hits both alike
            for name, kernel in kernels.items():  # each timed after an untimed pass of its own
                # (fastest's warm-up), so neither starts from the state the other one left
                took = fastest(lambda: [kernel(x, w) for w in weights], 1)
                best[name] = min(best[name], took / copies)
    return {"rows": rows, "cols": cols, "tokens": tokens, "weight_bytes": nbytes,
            "onednn": onednn, "f_linear_s": best["F.linear"], "archscope_s": best["archscope"],
            "ratio": best["F.linear"] / best["archscope"]}


def main() -> None:
    a = parse()
    spec = load_spec(a.model)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    print(f"{spec.name}, {a.dtype} on {cpu_name()}, torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads; fastest of {a.calls} calls"
          + ("; archscope = packed weights" if a.dtype == "bf16" else ""))
    phases = {f"decode b{b}": workload(spec, a.dtype, b, a.prompt).decode for b in a.batch}
    phases[f"prefill {a.prompt}"] = workload(spec, a.dtype, 1, a.prompt).prefill
    results = []
    for phase, shapes in phases.items():
        rows, totals = [], {"f_linear_s": 0.0, "archscope_s": 0.0}
        for s in shapes:
            r = time_shape(s.rows, s.cols, s.tokens, a.calls, dtype)
            r["count"] = s.count
            rows.append(r)
            for key in totals:
                totals[key] += s.count * r[key]
            print(f"  {phase:<12} {s.rows:>6} x {s.cols:<5} x{s.count:<4g} tokens {s.tokens:<4} "
                  f"F.linear {1e3 * r['f_linear_s']:8.3f} ms "
                  f"({r['weight_bytes'] / r['f_linear_s'] / 1e9:5.1f} GB/s)  archscope "
                  f"{1e3 * r['archscope_s']:8.3f} ms "
                  f"({r['weight_bytes'] / r['archscope_s'] / 1e9:5.1f} GB/s)  ratio "
                  f"{r['ratio']:.2f}{'' if r['onednn'] else '  (F.linear: below the size)'}")
        ratio = totals["f_linear_s"] / totals["archscope_s"]
        print(f"{phase}: all its matmuls {1e3 * totals['f_linear_s']:.1f} ms with F.linear, "
              f"{1e3 * totals['archscope_s']:.1f} ms with archscope's linear: ratio {ratio:.2f}")
        results.append({"phase": phase, "shapes": rows, **totals, "ratio": ratio})
    if a.json:
        write_json(a.json, {"what": f"{a.dtype} linears on the CPU, F.linear against "
                                    "archscope's (benchmarks/cpu_linear.py)", "dtype": a.dtype,
                            "cpu": cpu_name(),
                            "model": spec.name, "threads": torch.get_num_threads(),
                            "torch": torch.__version__, "results": results})


if __name__ == "__main__":
    main()
