"""Decode and prefill speed against transformers, case by case (the regression benchmark of
issue 17): archscope's model and transformers' class on the very same weight tensors.

Both models run through one stopwatch (archscope.measure.timed): a prefill of the prompt into
an empty cache, then one token per step, greedy, each region synchronised; transformers' model
is stepped through its own cache (--hf-cache dynamic or static), as `profile --compare-hf`
does. After one warm-up of each, runs alternate (archscope, transformers, archscope, ...) and
every pair gives a ratio, so a drift of a shared machine hits both sides of a ratio alike.
Ratios are speed ratios: archscope / transformers > 1 means archscope is faster.

Every timing is checked against the bandwidth wall measured in this process
(roofline.calibrate, probed again when a run seems to beat it; archscope.measure.limits): a
phase faster than its bytes allow at the fastest probe is printed as a measurement error and
enters no figure. At batch 1 each decode run is also set beside the matrix-vector bandwidth
measured in the same process at the model's own weight shapes (roofline.local_kernels: a
decode step's weight bytes over its matrix-vector products' time): the rate decode would reach
if those products were all it did. That probe is timed once, after the runs, on matrices of its
own (again, as `profile` does, where a run beat it); since this machine's bandwidth drifts by
tens of percent within minutes, after each batch-1 decode run the same generation is stepped
again with each step followed by a pass over the model's own weight matrices (every nn.Linear
once, one token, no other work): the same bytes, the same kernels, a fraction of a second
apart, so the ratio of each such pair is what the step's other work costs, free of the drift
between minutes.

Cases are named PHASE:bB:pP:DTYPE; the default is the whole matrix (decode at batch 1 and 8,
prompts 128 and 1,024, fp32 and bf16; prefill at 128 and 1,024, fp32 and bf16) of full-size
llama-3.2-1b with random weights, about 35 minutes on 2 cores: pick a subset with --cases
(shell patterns) and shrink the model with --layers.

    python benchmarks/decode_vs_hf.py --cases 'decode:b1:p1024:fp32' --layers 4 --runs 3
    python benchmarks/decode_vs_hf.py --cases 'decode:b1:*:fp32,prefill:*:fp32' --runs 5
    python benchmarks/decode_vs_hf.py --device cuda --step compile --cases 'decode:*:bf16' \
        --json reports/data/benchmarks/decode_vs_hf_cuda.json     # on a GPU; dry run: --device cpu
"""

from __future__ import annotations

import argparse
import fnmatch
import statistics
import time
from dataclasses import dataclass

import torch

from archscope.hardware import kernels
from archscope.measure import limits, roofline
from archscope.measure.fast import decode_step
from archscope.measure.generate import greedy, prefill
from archscope.measure.preflight import ProfileOptions, choose_linear_kernels
from archscope.measure.profile import hf_timed_generation, timed_generation
from archscope.measure.reference import HFStepper, hf_twin
from archscope.measure.timing import sync, to_torch_dtype
from archscope.nn import build_model
from archscope.nn.linear import pack_weights, packing_unavailable
from archscope.spec import load_spec

from common import cpu_name, write_json  # benchmarks/common.py, beside this script


@dataclass(frozen=True)
class Case:
    phase: str  # decode or prefill
    batch: int
    prompt: int
    dtype: str

    @property
    def name(self) -> str:
        return f"{self.phase}:b{self.batch}:p{self.prompt}:{self.dtype}"


MATRIX = ([Case("decode", b, p, d) for d in ("fp32", "bf16") for b in (1, 8)
           for p in (128, 1024)]
          + [Case("prefill", 1, p, d) for d in ("fp32", "bf16") for p in (128, 1024)])


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="llama-3.2-1b")
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   help="a spec override key=value (repeatable)")
    p.add_argument("--layers", type=int, default=None,
                   help="shrink the model to N layers (the same as --set n_layers=N)")
    p.add_argument("--cases", default="*",
                   help="comma-separated names or shell patterns of PHASE:bB:pP:DTYPE; "
                        f"all: {', '.join(c.name for c in MATRIX)}")
    p.add_argument("--device", default="cpu")
    p.add_argument("--new-tokens", type=int, default=32,
                   help="tokens per decode run (timed: all after the first)")
    p.add_argument("--runs", type=int, default=3, help="interleaved pairs per case")
    p.add_argument("--hf-cache", default="dynamic", choices=["dynamic", "static"])
    p.add_argument("--step", default="eager", choices=["eager", "compile"],
                   help="archscope's decode step (compile: fused and compiled, as profile "
                        "--compile runs it; on CUDA also captured as a CUDA graph)")
    p.add_argument("--pack-weights", action="store_true",
                   help="bf16 on a CPU: archscope's linears run on weights packed in oneDNN's "
                        "blocked layout (archscope.nn.linear.pack_weights; a second copy), "
                        "in either step (compile: packed after fusing)")
    p.add_argument("--json", default=None, help="also write the results to this file")
    a = p.parse_args()
    if a.runs < 1 or a.new_tokens < 2:
        p.error("--runs must be >= 1 and --new-tokens >= 2")
    if a.layers is not None:
        if a.layers < 1:
            p.error("--layers must be >= 1")
        a.overrides.append(f"n_layers={a.layers}")
    if a.pack_weights and packing_unavailable() is not None:
        p.error(f"--pack-weights cannot run here: {packing_unavailable()}")
    patterns = [c.strip() for c in a.cases.split(",") if c.strip()]
    a.selected = [c for c in MATRIX if any(fnmatch.fnmatch(c.name, pat) for pat in patterns)]
    if not a.selected:
        p.error(f"--cases {a.cases!r} names no case; the cases are "
                f"{', '.join(c.name for c in MATRIX)}")
    return a


def make_step(model, kind: str, device: torch.device):
    """eager, or what `profile --compile` runs on this device (fast.decode_step: q/k/v and
    gate/up fused, compiled; on CUDA captured as a CUDA graph)."""
    return decode_step(model, kind == "compile", device)[0]


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    return (f"{statistics.median(values):.3f} ({min(values):.3f}..{max(values):.3f}, "
            f"n={len(values)})")


def own_products(model, device: torch.device):
    """(bytes, a pass): the model's own matrix-vector products alone, one token through every
    nn.Linear in module order and nothing else; each matrix is read once per pass, as in a
    decode step (tied embeddings: the lm_head's read)."""
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    inputs = [torch.zeros(1, 1, m.in_features, dtype=m.weight.dtype, device=device)
              for m in linears]
    nbytes = sum(m.weight.nbytes + (m.bias.nbytes if m.bias is not None else 0)
                 for m in linears)

    def one_pass():
        for m, x in zip(linears, inputs):
            m(x)

    return nbytes, one_pass


def steps_beside_products(model, step, prompt, cache, new_tokens: int, device):
    """(the pass's bytes, [(step s, pass s)]): a generation like the timed one, each decode step
    followed by a pass over the model's own weight matrices (own_products), both timed: pairs a
    fraction of a second apart, so a drift of the machine hits both sides of a pair alike."""
    nbytes, one_pass = own_products(model, device)
    pairs = []
    with torch.inference_mode():
        cache.reset()
        token = greedy(prefill(model, prompt, cache))
        for _ in range(new_tokens - 1):
            sync(device)
            t0 = time.perf_counter()
            token = greedy(step(token[:, None], cache))
            sync(device)
            t1 = time.perf_counter()
            one_pass()
            sync(device)
            pairs.append((t1 - t0, time.perf_counter() - t1))
    return nbytes, pairs


def gemv_bandwidth(spec, device, case: Case, fastest: float) -> float:
    """The decode bandwidth of the model's matrix-vector products at its shapes (the kernel
    probe, timed once per process); where a run moved more (the probe read a slow moment), its
    kernels are timed again as `profile` does (measure/predicted.py settle_kernels: REPROBES
    more rounds, each shape keeping its fastest)."""
    def read() -> float:
        return roofline.local_kernels(spec, str(device), case.dtype, 1, case.prompt).bandwidth

    gemv = read()
    if fastest > gemv:
        for _ in range(limits.REPROBES):
            kernels.retime()
        gemv = read()
    return gemv


def run_case(case: Case, model, hf, spec, local, a, device) -> dict:
    new_tokens = a.new_tokens if case.phase == "decode" else 1
    prompt = torch.randint(0, spec.vocab_size, (case.batch, case.prompt),
                           generator=torch.Generator().manual_seed(0)).to(device)
    cache = model.new_cache(case.batch, case.prompt + new_tokens)
    stepper = HFStepper(hf, case.prompt + new_tokens, a.hf_cache)
    step = make_step(model, a.step, device)
    # after make_step, which fuses projections for the compiled step (new linears to pack);
    # a copy made for an earlier case is kept
    packed = pack_weights(model) if a.pack_weights else 0
    # the kernels each product runs, timed at this case's shapes as `profile` times them
    chosen = choose_linear_kernels(spec, ProfileOptions(
        device=a.device, dtype=case.dtype, batch=case.batch, prompt_len=case.prompt,
        pack_weights=a.pack_weights), device)
    wall = limits.wall_for(spec, local, case.prompt, new_tokens, case.batch, case.dtype)
    ours_tokens = timed_generation(model, step, prompt, cache, new_tokens)[0]  # warm-ups
    hf_tokens = hf_timed_generation(stepper, prompt, new_tokens)[0]
    ours, theirs, own = [], [], []
    for _ in range(a.runs):
        ours.append(timed_generation(model, step, prompt, cache, new_tokens)[1:])
        if case.phase == "decode" and case.batch == 1:
            own.append(steps_beside_products(model, step, prompt, cache, new_tokens, device))
        theirs.append(hf_timed_generation(stepper, prompt, new_tokens)[1:])
    wall, _ = limits.settle(wall, local, ours + theirs,
                            lambda: roofline.calibrate(device.type, case.dtype))
    o_pre, o_dec, errors = limits.screen(ours, wall, "archscope")
    t_pre, t_dec, hf_errors = limits.screen(theirs, wall, "transformers")
    # the phase this case times: seconds per run, None where rejected
    o_vals, t_vals = (o_dec, t_dec) if case.phase == "decode" else (o_pre, t_pre)
    result = {"case": case.name, "packed_linears": packed, "linear_kernels": chosen,
              "errors": [e["message"] for e in errors + hf_errors],
              "same_tokens": bool(torch.equal(ours_tokens.cpu(), hf_tokens.cpu())),
              "wall_bandwidth_bytes_per_s": wall.bandwidth, "wall_source": wall.source,
              "wall_probes_bytes_per_s": list(wall.probes),
              # speed ratio of each pair = transformers' time / archscope's time
              "ratios": [t / o for o, t in zip(o_vals, t_vals)
                         if o is not None and t is not None]}
    if case.phase == "prefill":
        result["archscope_prefill_s"] = [s for s in o_vals if s is not None]
        result["transformers_prefill_s"] = [s for s in t_vals if s is not None]
        return result
    tokens = case.batch * (new_tokens - 1)
    result["archscope_tokens_per_s"] = [tokens / s for s in o_vals if s is not None]
    result["transformers_tokens_per_s"] = [tokens / s for s in t_vals if s is not None]
    moved = [wall.decode_bytes / s for s in o_vals if s is not None]
    result["archscope_bytes_per_s"] = moved
    result["fraction_of_wall"] = [b / wall.bandwidth for b in moved]
    if case.batch == 1 and not a.pack_weights:  # the probe times plain weights, not packed
        gemv = gemv_bandwidth(spec, device, case, max(moved, default=0.0))
        result["gemv_bandwidth_bytes_per_s"] = gemv
        result["fraction_of_gemv"] = [b / gemv for b in moved]
    if case.batch == 1:
        # each step beside a pass over its own weights' products (after each run; a run
        # rejected by the wall leaves its pairs out): per run, the median over its pairs of
        # (a step's bytes / its seconds) / (the pass's bytes / its seconds)
        nbytes = own[0][0]
        per_step = wall.decode_bytes / wall.decode_steps
        kept = [pairs for d, (_, pairs) in zip(o_dec, own) if d is not None]
        result["own_products_bytes"] = nbytes
        result["own_products_bytes_per_s"] = [
            statistics.median(nbytes / p for _, p in pairs) for pairs in kept]
        result["fraction_of_own_products"] = [
            statistics.median((per_step / s) / (nbytes / p) for s, p in pairs)
            for pairs in kept]
    return result


def report(r: dict) -> list[str]:
    if "archscope_tokens_per_s" in r:
        lines = [f"{r['case']:<24} archscope {spread(r['archscope_tokens_per_s'])} tok/s | "
                 f"transformers {spread(r['transformers_tokens_per_s'])} tok/s | "
                 f"per-pair ratio {spread(r['ratios'])}"]
        achieved = r["archscope_bytes_per_s"]
        if achieved:
            line = (f"{'':<24} archscope moves {statistics.median(achieved) / 1e9:.2f} GB/s: "
                    f"{spread(r['fraction_of_wall'])} of the wall ({r['wall_source']}, "
                    f"{r['wall_bandwidth_bytes_per_s'] / 1e9:.2f} GB/s)")
            if "fraction_of_gemv" in r:
                line += (f"; {spread(r['fraction_of_gemv'])} of the matrix-vector bandwidth at "
                         f"its shapes ({r['gemv_bandwidth_bytes_per_s'] / 1e9:.2f} GB/s)")
            if r.get("fraction_of_own_products"):
                own = statistics.median(r["own_products_bytes_per_s"])
                line += (f"; {spread(r['fraction_of_own_products'])} of its own weights' "
                         f"products, step by step ({own / 1e9:.2f} GB/s)")
            lines.append(line)
    else:
        lines = [f"{r['case']:<24} archscope {spread(r['archscope_prefill_s'])} s | "
                 f"transformers {spread(r['transformers_prefill_s'])} s | per-pair speed "
                 f"ratio {spread(r['ratios'])}"]
    if not r["same_tokens"]:
        lines.append(f"{'':<24} the two models' greedy tokens differ")
    lines += [f"{'':<24} MEASUREMENT ERROR: {e}" for e in r["errors"]]
    return lines


def main() -> None:
    a = parse()
    device = torch.device(a.device)
    spec = load_spec(a.model, a.overrides)
    print(f"{spec.name} ({spec.n_layers} layers, random weights) on {device}, torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads; archscope step {a.step}, "
          f"transformers cache {a.hf_cache}; {'packed weights; ' if a.pack_weights else ''}"
          f"{a.new_tokens} new tokens per decode run, "
          f"{a.runs} interleaved pairs per case")
    results = []
    for dtype in dict.fromkeys(c.dtype for c in a.selected):  # one model in memory at a time
        local = roofline.calibrate(device.type, dtype)
        model = build_model(spec, device, to_torch_dtype(dtype))
        hf = hf_twin(model)
        for case in (c for c in a.selected if c.dtype == dtype):
            results.append(run_case(case, model, hf, spec, local, a, device))
            print("\n".join(report(results[-1])), flush=True)
        del model, hf
    if a.json:
        gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
        write_json(a.json, {"what": "archscope's decode and prefill against transformers' "
                                    "class on the same weights, pairs interleaved "
                                    "(benchmarks/decode_vs_hf.py)",
                            "cpu": cpu_name(),
                            "model": spec.name, "overrides": a.overrides, "runs": a.runs,
                            "device": str(device), "gpu_name": gpu,
                            "new_tokens": a.new_tokens, "hf_cache": a.hf_cache,
                            "step": a.step, "pack_weights": a.pack_weights,
                            "threads": torch.get_num_threads(), "torch": torch.__version__,
                            "results": results})


if __name__ == "__main__":
    main()
