"""Weight-only quantized decode against bf16: the same model, the same prompt, one run.

One bf16 model is built (random weights); int8 and int4 copies are made from it with
archscope.nn.quantized (torch's packed kernels). After a warm-up of each, the generations
alternate (bf16, int8, int4, bf16, ...) so a drift of a shared machine hits all alike; each is
timed as `archscope profile` times it (archscope.measure.profile.timed_generation: the decode
steps after the first token). Printed per format: decode tokens/s (median of --runs), its ratio
to bf16 (median of the per-round ratios, min-max beside it), the weight bytes one step reads
(archscope.measure.quantized.decode_weight_bytes: every weight held but the embedding table's
unread rows; the KV cache, under 1% here, is left out) and the GB/s that rate reaches, and the
logit difference from bf16 on the prompt.

Beside each measurement, the roofline `archscope profile --hardware local` states for the same
run (archscope.measure.predicted: this machine's kernels timed at the model's shapes in each
format, so each format's dequantisation is in its kernels' time; re-timed, as the profile does,
when a run beats it), the bound it predicts, and its error, predicted / measured - 1.
--json PATH writes all of it, with the machine and the command.

With --kernels it first times each kernel alone at the model's linear shapes (batch 1: one
matrix-vector product; the fastest of 20 calls, the three formats alternating) and prints the
GB/s each reaches: the ceiling decode can reach in each format.

On a machine whose cores other work shares, a 2-thread kernel waits at each parallel region for
the second core (scheduler slices of milliseconds, longer than a GEMV): compare at --threads 1
there.

Run: python benchmarks/quantized_decode.py                  (full llama-3.2-1b, 5-15 min on 2 cores)
     python benchmarks/quantized_decode.py --layers 2 --runs 3 --kernels   (a quick check)
     python benchmarks/quantized_decode.py --json reports/data/benchmarks/quantized_decode-cpu.json
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
from pathlib import Path

import torch
import torch.nn.functional as F

from archscope.measure import predicted
from archscope.measure.generate import eager_step
from archscope.measure.preflight import ProfileOptions
from archscope.measure.profile import timed_generation
from archscope.measure.quantize import runnable_format
from archscope.measure.quantized import decode_weight_bytes, quantize_for_run
from archscope.nn import build_model
from archscope.nn.quantized import QuantizedLinear
from archscope.spec import load_spec

from common import cpu_name, fastest, write_json  # benchmarks/common.py, beside this script

FORMATS = ("bf16", "int8", "int4")


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="llama-3.2-1b")
    p.add_argument("--layers", type=int, default=None, help="n_layers override (quick check)")
    p.add_argument("--prompt-len", type=int, default=128)
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--kernels", action="store_true",
                   help="also time each kernel alone at the model's linear shapes")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    args = p.parse_args()
    if args.runs < 1 or args.new_tokens < 2:
        p.error("--runs >= 1 and --new-tokens >= 2")
    return args


def kernels(quantized: torch.nn.Module) -> None:
    """GB/s of one matrix-vector product per format at each shape the model quantizes."""
    shapes = sorted({(m.out_features, m.in_features) for m in quantized.modules()
                     if isinstance(m, QuantizedLinear)})
    print("kernels alone, batch 1 (fastest of 20): GB/s of the bytes each format holds")
    for out_f, in_f in shapes:
        w = torch.randn(out_f, in_f, dtype=torch.bfloat16) * in_f ** -0.5
        layers = {"bf16": lambda x: F.linear(x, w)}
        held = {"bf16": w.numel() * w.element_size()}
        for fmt in FORMATS[1:]:
            q = QuantizedLinear.random(out_f, in_f, runnable_format(fmt).name)
            layers[fmt], held[fmt] = q, q.nbytes
        x = torch.randn(1, in_f, dtype=torch.bfloat16)
        best = dict.fromkeys(FORMATS, float("inf"))
        for _ in range(3):  # the formats alternate; each keeps its best
            for f in FORMATS:
                best[f] = min(best[f], fastest(lambda: layers[f](x), 20))
        print(f"  {out_f:>6} x {in_f:<6} " + "  ".join(
            f"{f} {1e3 * best[f]:.3f} ms {held[f] / best[f] / 1e9:5.1f} GB/s "
            f"(x{best['bf16'] / best[f]:.2f})" for f in FORMATS))


def roofline(spec, a: argparse.Namespace, fmt: str, measured: float) -> dict:
    """What `archscope profile --hardware local` predicts for this run in `fmt`, settled as the
    profile settles it when the measurement beats it."""
    device = torch.device("cpu")
    o = ProfileOptions(device="cpu", dtype="bf16", prompt_len=a.prompt_len,
                       new_tokens=a.new_tokens, hardware="local",
                       weight_format=None if fmt == "bf16" else runnable_format(fmt).name)
    hw = predicted.settle_kernels(spec, o, device, predicted.roofline_hardware(spec, o, device),
                                  None, measured)
    p = predicted.predictions(spec, o, hw, hw, measured)
    return {"predicted_tokens_per_s": p["predicted_decode_tokens_per_s"],
            "predicted_bound": p["predicted_decode_bound"],
            "prediction_error": round(p["predicted_decode_tokens_per_s"] / measured - 1, 4),
            "roofline_source": hw.source}


def main() -> None:
    a = parse()
    torch.set_num_threads(a.threads)
    spec = load_spec(a.model, [f"n_layers={a.layers}"] if a.layers else [])
    prompt = torch.randint(0, spec.vocab_size, (1, a.prompt_len),
                           generator=torch.Generator().manual_seed(0))
    models, diffs = {"bf16": build_model(spec, "cpu", torch.bfloat16, seed=0)}, {}
    for fmt in FORMATS[1:]:
        models[fmt] = copy.deepcopy(models["bf16"])
        diffs[fmt] = quantize_for_run(models[fmt], fmt, prompt)["logits_vs_bf16"]
    if a.kernels:
        kernels(models["int8"])
    caches = {f: m.new_cache(1, a.prompt_len + a.new_tokens) for f, m in models.items()}
    steps = {f: eager_step(m) for f, m in models.items()}

    def rate(fmt: str) -> float:
        _, _, seconds = timed_generation(models[fmt], steps[fmt], prompt, caches[fmt],
                                         a.new_tokens)
        return (a.new_tokens - 1) / seconds

    for fmt in FORMATS:  # warm-up
        rate(fmt)
    rounds = [{fmt: rate(fmt) for fmt in FORMATS} for _ in range(a.runs)]

    results = []
    for fmt in FORMATS:
        median = statistics.median(r[fmt] for r in rounds)
        ratios = [r[fmt] / r["bf16"] for r in rounds]
        step_bytes = decode_weight_bytes(models[fmt])
        results.append({
            "format": fmt, "tokens_per_s": round(median, 3),
            "rounds_tokens_per_s": [round(r[fmt], 3) for r in rounds],
            "ratio_to_bf16": round(statistics.median(ratios), 3),
            "ratio_to_bf16_min": round(min(ratios), 3), "ratio_to_bf16_max": round(max(ratios), 3),
            "weight_bytes_per_step": step_bytes,
            "achieved_bytes_per_s": round(median * step_bytes),
            "logits_vs_bf16": diffs.get(fmt), **roofline(spec, a, fmt, median)})
    title = (f"{spec.name}{f' ({a.layers} layers)' if a.layers else ''}: batch 1, prompt "
             f"{a.prompt_len}, {a.new_tokens} new tokens, {a.threads} threads, {a.runs} rounds, "
             f"torch {torch.__version__}")
    print(title)
    print(f"{'format':7} {'tok/s':>8} {'x bf16':>7} {'(min-max)':>13} {'MB/step':>9} "
          f"{'GB/s':>6} {'roofline':>9} {'bound':>8} {'error':>7}  logits vs bf16 "
          "(max abs / mean abs, greedy token)")
    for r in results:
        d = r["logits_vs_bf16"]
        logits = (f"{d['max_abs']:.3f} / {d['mean_abs']:.4f}, "
                  f"{'same' if d['greedy_token_agrees'] else 'differs'}") if d else "-"
        ratio_range = f"({r['ratio_to_bf16_min']:.2f}-{r['ratio_to_bf16_max']:.2f})"
        print(f"{r['format']:7} {r['tokens_per_s']:8.2f} {r['ratio_to_bf16']:7.2f} "
              f"{ratio_range:>13} {r['weight_bytes_per_step'] / 1e6:9.1f} "
              f"{r['achieved_bytes_per_s'] / 1e9:6.2f} {r['predicted_tokens_per_s']:9.2f} "
              f"{r['predicted_bound']:>8} {100 * r['prediction_error']:+6.1f}%  {logits}")
    if a.json:
        write_json(a.json, {
            "what": "weight-only int8 and int4 decode against bf16, one process, rounds "
                    "alternating (benchmarks/quantized_decode.py)",
            "title": title, "model": spec.name, "layers": a.layers or spec.n_layers,
            "batch": 1, "prompt_len": a.prompt_len, "new_tokens": a.new_tokens,
            "threads": a.threads, "rounds": a.runs, "torch_version": torch.__version__,
            "machine": {"cpu": cpu_name(),
                        "cores": os.cpu_count()},
            "formats": results})


if __name__ == "__main__":
    main()
