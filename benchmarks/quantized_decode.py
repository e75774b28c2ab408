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

With --kernels it first times each kernel alone at the model's linear shapes (batch 1: one
matrix-vector product; the fastest of 20 calls, the three formats alternating) and prints the
GB/s each reaches: the ceiling decode can reach in each format.

On a machine whose cores other work shares, a 2-thread kernel waits at each parallel region for
the second core (scheduler slices of milliseconds, longer than a GEMV): compare at --threads 1
there.

Run: python benchmarks/quantized_decode.py                  (full llama-3.2-1b, 5-15 min on 2 cores)
     python benchmarks/quantized_decode.py --layers 2 --runs 3 --kernels   (a quick check)
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
import torch.nn.functional as F

from archscope.measure.generate import eager_step
from archscope.measure.profile import timed_generation
from archscope.measure.quantized import decode_weight_bytes, quantize_for_run
from archscope.nn import build_model
from archscope.nn.quantized import QuantizedLinear
from archscope.spec import load_spec

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
    args = p.parse_args()
    if args.runs < 1 or args.new_tokens < 2:
        p.error("--runs >= 1 and --new-tokens >= 2")
    return args


def _fastest(call, n: int = 20) -> float:
    call()
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return best


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
            q = QuantizedLinear.random(out_f, in_f, fmt)
            layers[fmt], held[fmt] = q, q.nbytes
        x = torch.randn(1, in_f, dtype=torch.bfloat16)
        best = dict.fromkeys(FORMATS, float("inf"))
        for _ in range(3):  # the formats alternate; each keeps its best
            for f in FORMATS:
                best[f] = min(best[f], _fastest(lambda: layers[f](x)))
        print(f"  {out_f:>6} x {in_f:<6} " + "  ".join(
            f"{f} {1e3 * best[f]:.3f} ms {held[f] / best[f] / 1e9:5.1f} GB/s "
            f"(x{best['bf16'] / best[f]:.2f})" for f in FORMATS))


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

    print(f"{spec.name}{f' ({a.layers} layers)' if a.layers else ''}: batch 1, prompt "
          f"{a.prompt_len}, {a.new_tokens} new tokens, {a.threads} threads, {a.runs} rounds, "
          f"torch {torch.__version__}")
    print(f"{'format':7} {'tok/s':>8} {'x bf16':>7} {'(min-max)':>13} {'MB/step':>9} "
          f"{'GB/s':>6}  logits vs bf16 (max abs / mean abs, greedy token)")
    for fmt in FORMATS:
        median = statistics.median(r[fmt] for r in rounds)
        ratios = [r[fmt] / r["bf16"] for r in rounds]
        step_bytes = decode_weight_bytes(models[fmt])
        d = diffs.get(fmt)
        logits = (f"{d['max_abs']:.3f} / {d['mean_abs']:.4f}, "
                  f"{'same' if d['greedy_token_agrees'] else 'differs'}") if d else "-"
        print(f"{fmt:7} {median:8.2f} {statistics.median(ratios):7.2f} "
              f"{f'({min(ratios):.2f}-{max(ratios):.2f})':>13} {step_bytes / 1e6:9.1f} "
              f"{median * step_bytes / 1e9:6.2f}  {logits}")


if __name__ == "__main__":
    main()
