"""Linears on the CPU: F.linear against the kernel archscope chose, side by side at a model's own
weight shapes. archscope times its candidates once at each shape (archscope.hardware.kernels:
F.linear and oneDNN's kernel for fp32; F.linear and a packed copy for bf16, where this CPU can
pack) and runs the fastest; this script then times that choice against F.linear again, in
alternation, to show that the choice holds: at least as fast as F.linear in every phase.

For each phase (a decode step of --batch tokens, a prefill of --prompt tokens) the matmuls are
those archscope's kernel probe prices the model by (archscope.estimate.kernel_shapes: every
distinct weight shape with the tokens the phase feeds it, the head on the last position only
in a prefill). Each shape is timed with both kernels in alternation, the fastest of --calls
each, under inference mode as the model runs; a decode-sized product cycles through copies of
its matrix that together outgrow the caches (a decode step reads every weight from memory).
Where F.linear itself was chosen both columns are the same call, timed once (ratio 1).
Printed per shape: the chosen kernel, both times, the GB/s of weights each reaches, and the
ratio F.linear / archscope (> 1: archscope's is faster); per phase, the same for the phase's
whole set of matmuls (each shape times how many the phase runs).

    python benchmarks/cpu_linear.py             # llama-3.2-1b: decode b1 and b8, prefill 128
    python benchmarks/cpu_linear.py --dtype bf16 --json reports/data/benchmarks/cpu_linear-cpu-bf16.json
    python benchmarks/cpu_linear.py --model qwen3-8b --json /tmp/cpu_linear.json
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from archscope.estimate.kernel_shapes import workload
from archscope.hardware import kernels
from archscope.hardware.kernels import FLUSH_BYTES, REUSED_TOKENS
from archscope.nn.linear import onednn_linear, packed_layer, packing_unavailable
from archscope.spec import load_spec

from common import cpu_name, fastest, write_json  # benchmarks/common.py, beside this script


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="llama-3.2-1b")
    p.add_argument("--batch", type=int, action="append", default=None,
                   help="decode batch (repeatable; default 1 and 8)")
    p.add_argument("--prompt", type=int, default=128, help="prefill tokens")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"],
                   help="fp32: F.linear or oneDNN's kernel; bf16: F.linear or a packed copy "
                        "(where this CPU can pack)")
    p.add_argument("--calls", type=int, default=7, help="timed calls per kernel and shape")
    p.add_argument("--json", default=None, help="also write the results to this file")
    a = p.parse_args()
    a.batch = a.batch or [1, 8]
    return a


def chosen_kernel(kernel: str, weights: list[torch.Tensor]):
    """x, w -> x @ w.T on `kernel`, for each of `weights` (a packed kernel packs them first)."""
    if kernel == "onednn":
        return lambda x, w: onednn_linear(x, w, None)
    if kernel == "packed":
        packed = {id(w): packed_layer(w).packed for w in weights}
        return lambda x, w: onednn_linear(x, packed[id(w)], None)
    raise ValueError(kernel)


def time_shape(rows: int, cols: int, tokens: int, calls: int, dtype: torch.dtype,
               kernel: str) -> dict:
    """F.linear and the chosen kernel at one shape: seconds of one product each (fastest of
    `calls`, in alternation); the same call once where F.linear was chosen."""
    nbytes = rows * cols * dtype.itemsize
    # as the kernel probe does: copies that outgrow the caches, one from REUSED_TOKENS rows
    copies = 1 if tokens >= REUSED_TOKENS else max(1, -(-FLUSH_BYTES // nbytes))
    weights = [torch.randn(rows, cols).to(dtype) for _ in range(copies)]
    x = torch.randn(tokens, cols).to(dtype)
    runs = {"F.linear": F.linear}
    if kernel != "aten":
        runs["archscope"] = chosen_kernel(kernel, weights)
    best = dict.fromkeys(runs, float("inf"))
    with torch.inference_mode():
        for _ in range(calls):  # alternating, so a drift hits both alike
            for name, run in runs.items():  # each timed after an untimed pass of its own
                # (fastest's warm-up), so neither starts from the state the other one left
                took = fastest(lambda: [run(x, w) for w in weights], 1)
                best[name] = min(best[name], took / copies)
    ours = best.get("archscope", best["F.linear"])
    return {"rows": rows, "cols": cols, "tokens": tokens, "weight_bytes": nbytes,
            "kernel": kernel, "f_linear_s": best["F.linear"], "archscope_s": ours,
            "ratio": best["F.linear"] / ours}


def main() -> None:
    a = parse()
    spec = load_spec(a.model)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    packs = a.dtype == "bf16"
    why_not = packing_unavailable() if packs else None
    print(f"{spec.name}, {a.dtype} on {cpu_name()}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; fastest of {a.calls} calls; candidates "
          f"{', '.join(kernels.candidates(a.dtype, 'cpu', packs))}"
          + (f" (no packed copy: {why_not})" if why_not else ""))
    phases = {f"decode b{b}": workload(spec, a.dtype, b, a.prompt).decode for b in a.batch}
    phases[f"prefill {a.prompt}"] = workload(spec, a.dtype, 1, a.prompt).prefill
    results = []
    for phase, shapes in phases.items():
        step_bytes = sum(s.count * s.nbytes for s in shapes)
        rows, totals = [], {"f_linear_s": 0.0, "archscope_s": 0.0}
        for s in shapes:
            kernel, _ = kernels.fastest(s, a.dtype, "cpu", step_bytes, packs)  # as profile does
            r = time_shape(s.rows, s.cols, s.tokens, a.calls, dtype, kernel)
            r["count"] = s.count
            rows.append(r)
            for key in totals:
                totals[key] += s.count * r[key]
            print(f"  {phase:<12} {s.rows:>6} x {s.cols:<5} x{s.count:<4g} tokens {s.tokens:<4} "
                  f"{kernel:<6} F.linear {1e3 * r['f_linear_s']:8.3f} ms "
                  f"({r['weight_bytes'] / r['f_linear_s'] / 1e9:5.1f} GB/s)  archscope "
                  f"{1e3 * r['archscope_s']:8.3f} ms "
                  f"({r['weight_bytes'] / r['archscope_s'] / 1e9:5.1f} GB/s)  ratio "
                  f"{r['ratio']:.2f}{'  (F.linear chosen: one call)' if kernel == 'aten' else ''}")
        ratio = totals["f_linear_s"] / totals["archscope_s"]
        chosen = sorted({r["kernel"] for r in rows})
        print(f"{phase}: all its matmuls {1e3 * totals['f_linear_s']:.1f} ms with F.linear, "
              f"{1e3 * totals['archscope_s']:.1f} ms with archscope's choice "
              f"({', '.join(chosen)}): ratio {ratio:.2f}")
        results.append({"phase": phase, "shapes": rows, **totals, "ratio": ratio,
                        "kernels": chosen})
    if a.json:
        write_json(a.json, {"what": f"{a.dtype} linears on the CPU, F.linear against the kernel "
                                    "archscope chose by timing (benchmarks/cpu_linear.py)",
                            "dtype": a.dtype, "cpu": cpu_name(), "model": spec.name,
                            "threads": torch.get_num_threads(), "torch": torch.__version__,
                            "candidates": list(kernels.candidates(a.dtype, "cpu", packs)),
                            "margin": kernels.MARGIN,
                            "packing_unavailable": why_not, "results": results})


if __name__ == "__main__":
    main()
