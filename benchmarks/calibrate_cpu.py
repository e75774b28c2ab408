"""Fit this CPU's achievable fractions for `archscope fit` from archscope's own profile runs.

    python benchmarks/calibrate_cpu.py [--out reports/data/calibration/cpu.json] [--quick]

Each run is `archscope profile` (archscope.measure.profile) on the local CPU with random
weights: a small preset or a few layers of one, a short prompt and a few new tokens, so the
whole calibration takes a few minutes. Right before each run, this machine's rates for that
model are measured on the model's own kernels (archscope.hardware.kernels: its decode step's
matrix-vector products and its prefill's matmuls, timed at their shapes), and the fit roofline
(archscope.estimate.fit, `--gpu cpu`) predicts the run's prefill and decode step from them with
fractions 1.0. Then the two fractions (bandwidth, compute) are chosen on a grid to minimise the
largest |predicted / measured - 1| over every run's prefill and decode (a minimax fit, in the
measure the target is stated in, of the roofline max(compute, memory) itself, so neither phase
is assumed to be bound by one term), and
the roofline is evaluated again with the fitted fractions. The fractions say how much of its
kernels' speed a whole forward keeps (attention, norms, the framework between kernels). The
JSON keeps the machine, every run's raw measurement, the kernel rates it was priced at and both
predictions, the fitted fractions and the largest error, so the fit can be redone from the
data. Copy the fitted fractions into archscope/hardware/achievable.yaml (`cpu:`) when they
change.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

# (preset, --set overrides, dtype, prompt_len, new_tokens): small enough to keep runs short.
RUNS = (
    ("llama-3.2-1b", ("n_layers=2",), "fp32", 128, 16),
    ("llama-3.2-1b", ("n_layers=4",), "fp32", 64, 16),
    ("qwen3-0.6b", ("n_layers=4",), "fp32", 128, 16),
    ("smollm3-3b", ("n_layers=4",), "fp32", 128, 16),
    ("gpt2", (), "fp32", 128, 16),
    ("llama-3.2-1b", ("n_layers=2",), "bf16", 128, 16),
)
OUT = Path(__file__).resolve().parents[1] / "reports" / "data" / "calibration" / "cpu.json"


def _measure(name: str, overrides, dtype: str, prompt_len: int, new_tokens: int,
             repeats: int) -> dict:
    from archscope.hardware import kernels
    from archscope.measure.preflight import ProfileOptions
    from archscope.measure.profile import profile
    from archscope.spec import load_spec

    kernels.forget()  # this run's kernels are timed next to it, not reused
    spec = load_spec(name, list(overrides))
    options = ProfileOptions(device="cpu", dtype=dtype, prompt_len=prompt_len,
                             new_tokens=new_tokens, repeats=repeats, hardware="local",
                             overrides=tuple(overrides))
    record = profile(spec, options)
    return {"model": name, "overrides": list(overrides), "dtype": dtype, "prompt_len": prompt_len,
            "new_tokens": new_tokens, "batch": 1, "repeats": repeats,
            "measured_prefill_ms": record["prefill_ms"],
            "measured_decode_ms_per_step": record["decode_ms_per_step"],
            "profile_predicted_prefill_ms": record["predicted_prefill_ms"],
            "profile_predicted_decode_tokens_per_s": record["predicted_decode_tokens_per_s"],
            "kernel_rates": record["hardware_source"]}


def _predict(run: dict, hw) -> dict:
    """The fit roofline's prefill (prompt = prompt_len) and decode step (at the middle of the
    generated tokens) for one run at fractions 1.0; `hw` is the probed CPU, which `fit` prices
    at this model's kernels (timed by the run's profile just before, and cached)."""
    from archscope.estimate.fit import Setup, fit
    from archscope.spec import load_spec

    spec = load_spec(run["model"], run["overrides"])
    common = dict(weight_format=run["dtype"], kv_dtype=run["dtype"], bandwidth_fraction=1.0,
                  compute_fraction=1.0)
    pre = fit(spec, hw, Setup(context=run["prompt_len"], **common)).prefill
    mid = run["prompt_len"] + run["new_tokens"] // 2
    dec = fit(spec, hw, Setup(context=mid, **common)).decode
    return {"prefill_ms": 1e3 * pre.seconds, "prefill_compute_ms": 1e3 * pre.compute_s,
            "prefill_memory_ms": 1e3 * pre.memory_s, "prefill_bound": pre.bound,
            "decode_ms": 1e3 * dec.seconds, "decode_compute_ms": 1e3 * dec.compute_s,
            "decode_memory_ms": 1e3 * dec.memory_s, "decode_bound": dec.bound}


def _at_fractions(raw: dict, b: float, c: float) -> dict:
    """`raw` (fractions 1.0) at bandwidth fraction b and compute fraction c: each term scales
    as 1 / its fraction, and a phase takes the larger (fit_roofline's max, no interconnect)."""
    out = {}
    for phase in ("prefill", "decode"):
        compute, memory = raw[f"{phase}_compute_ms"] / c, raw[f"{phase}_memory_ms"] / b
        out.update({f"{phase}_ms": max(compute, memory), f"{phase}_compute_ms": compute,
                    f"{phase}_memory_ms": memory,
                    f"{phase}_bound": "compute" if compute >= memory else "memory"})
    return out


def _worst(runs, b: float, c: float) -> float:
    """The largest |predicted / measured - 1| at fractions b, c (terms scale as 1 / fraction)."""
    worst = 0.0
    for r in runs:
        raw = r["raw"]
        for phase, measured in (("prefill", r["measured_prefill_ms"]),
                                ("decode", r["measured_decode_ms_per_step"])):
            predicted = _at_fractions(raw, b, c)[f"{phase}_ms"]
            worst = max(worst, abs(predicted / measured - 1))
    return worst


def _minimax(runs) -> tuple[float, float]:
    grid = [round(0.02 * k, 2) for k in range(1, 101)]  # 0.02 .. 2.0
    return min(((b, c) for b in grid for c in grid), key=lambda bc: _worst(runs, *bc))


def _error(predicted: float, measured: float) -> float:
    return round(predicted / measured - 1, 4)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--quick", action="store_true", help="two runs, two repeats")
    args = parser.parse_args(argv)
    from archscope.hardware import probe_cpu

    hw = probe_cpu()
    runs_spec = RUNS[:2] if args.quick else RUNS
    repeats = 2 if args.quick else 5
    start = time.perf_counter()
    runs = []
    for name, overrides, dtype, prompt, new in runs_spec:
        run = _measure(name, overrides, dtype, prompt, new, repeats)
        run["raw"] = _predict(run, hw)
        runs.append(run)
        print(f"{name} {' '.join(overrides)} {dtype} P={prompt}: prefill {run['measured_prefill_ms']:.1f} "
              f"ms (raw roofline {run['raw']['prefill_ms']:.1f}), decode "
              f"{run['measured_decode_ms_per_step']:.2f} ms/step (raw "
              f"{run['raw']['decode_ms']:.2f})", flush=True)
    bandwidth, compute = _minimax(runs)
    for r in runs:
        r["fitted"] = _at_fractions(r["raw"], bandwidth, compute)
        r["prefill_error"] = _error(r["fitted"]["prefill_ms"], r["measured_prefill_ms"])
        r["decode_error"] = _error(r["fitted"]["decode_ms"], r["measured_decode_ms_per_step"])
        r["raw_prefill_error"] = _error(r["raw"]["prefill_ms"], r["measured_prefill_ms"])
        r["raw_decode_error"] = _error(r["raw"]["decode_ms"], r["measured_decode_ms_per_step"])
    worst = max(abs(r[k]) for r in runs for k in ("prefill_error", "decode_error"))
    worst_raw = max(abs(r[k]) for r in runs for k in ("raw_prefill_error", "raw_decode_error"))
    data = {
        "what": "archscope fit's roofline on this CPU, fitted to archscope profile runs",
        "command": "python benchmarks/calibrate_cpu.py" + (" --quick" if args.quick else ""),
        "method": __doc__.split("\n\n", 2)[2].split("Copy the")[0].strip(),
        "machine": {**hw.row(), "python": platform.python_version()},
        "fitted_fractions": {"bandwidth": round(bandwidth, 4), "compute": round(compute, 4)},
        "max_abs_error_fitted": worst, "max_abs_error_raw": worst_raw,
        "within_25_percent": worst <= 0.25, "seconds": round(time.perf_counter() - start, 1),
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"fitted: bandwidth {bandwidth:.3f}, compute {compute:.3f}; largest error "
          f"{100 * worst:.1f}% (at fractions 1.0: {100 * worst_raw:.1f}%) -> {args.out}")


if __name__ == "__main__":
    main()
