"""archscope's decode tokens/s against transformers' generate: same weights, same machine.

Both models hold the very same weight tensors (transformers' class is handed archscope's
tensors), run in the same dtype on the same device with SDPA attention, and generate the same
greedy tokens from the same prompt. Runs alternate (archscope, transformers, archscope, ...)
after a warm-up of each, so a drift of a shared machine hits both alike.

- archscope: the decode steps after the first token, timed directly (archscope.measure.profile);
- transformers: generate(new_tokens) - generate(1), i.e. the same new_tokens - 1 steps with
  generate's own per-step work included (that is what a user of generate gets); the headline
  takes the difference of the two medians (a per-run difference is shown per run).
tokens/s = batch * (new_tokens - 1) / seconds; medians of --runs (>= 3), ratio printed.

Run: python benchmarks/decode_vs_hf.py llama-3.2-1b --set n_layers=2 --dtype fp32 \\
         --prompt-len 64 --new-tokens 16 --runs 5              (target: ratio >= 1)
"""

from __future__ import annotations

import argparse
import statistics

import torch

from archscope.measure.fast import CUDAGraphStep, compiled_step
from archscope.measure.generate import eager_step
from archscope.measure.profile import timed_generation
from archscope.measure.reference import hf_generate, hf_twin
from archscope.measure.timing import to_torch_dtype
from archscope.nn import build_model
from archscope.spec import load_spec


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "fp16", "bf16"])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--prompt-len", type=int, default=64)
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--hf-cache", default="dynamic", choices=["dynamic", "static"])
    p.add_argument("--step", default="eager", choices=["eager", "compile", "cuda-graph"],
                   help="archscope's decode step (cuda-graph: compiled and captured, CUDA only)")
    args = p.parse_args()
    if args.runs < 3:
        p.error("--runs must be at least 3 (the medians need them)")
    return args


def make_step(model, kind: str):
    if kind == "compile":
        return compiled_step(model)
    if kind == "cuda-graph":
        return CUDAGraphStep(model, compile=True)
    return eager_step(model)


def main() -> None:
    a = parse()
    spec = load_spec(a.model, a.overrides)
    device = torch.device(a.device)
    model = build_model(spec, device, to_torch_dtype(a.dtype))
    hf = hf_twin(model)
    prompt = torch.randint(0, spec.vocab_size, (a.batch, a.prompt_len),
                           generator=torch.Generator().manual_seed(0)).to(device)
    cache = model.new_cache(a.batch, a.prompt_len + a.new_tokens)
    step = make_step(model, a.step)
    tokens = a.batch * (a.new_tokens - 1)

    ours_tokens = timed_generation(model, step, prompt, cache, a.new_tokens)[0]  # warm-up
    hf_tokens = hf_generate(hf, prompt, a.new_tokens, a.hf_cache)[0]
    hf_generate(hf, prompt, 1, a.hf_cache)
    ours, ones, fulls = [], [], []
    print(f"{spec.name} ({spec.n_layers} layers) on {device}, {a.dtype}, batch {a.batch}, "
          f"prompt {a.prompt_len}, {a.new_tokens} new tokens, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; archscope step: {a.step}, transformers cache: "
          f"{a.hf_cache}")
    print(f"{'run':>4} {'archscope tok/s':>16} {'transformers tok/s':>19}")
    for i in range(a.runs):
        _, _, decode_s = timed_generation(model, step, prompt, cache, a.new_tokens)
        one = hf_generate(hf, prompt, 1, a.hf_cache)[1]
        full = hf_generate(hf, prompt, a.new_tokens, a.hf_cache)[1]
        ours.append(tokens / decode_s)
        ones.append(one)
        fulls.append(full)
        print(f"{i + 1:>4} {ours[-1]:>16.2f} {tokens / max(full - one, 1e-9):>19.2f}")
    mo = statistics.median(ours)
    mt = tokens / max(statistics.median(fulls) - statistics.median(ones), 1e-9)
    print(f"median {mo:>14.2f} {mt:>19.2f}")
    # The best runs show each at its quietest: on a shared machine the median mixes quiet and
    # loaded runs. transformers: fastest generate(T) minus fastest generate(1).
    best_hf = tokens / max(min(fulls) - min(ones), 1e-9)
    print(f"best   {max(ours):>14.2f} {best_hf:>19.2f}")
    print(f"ratio archscope / transformers = {mo / mt:.3f}  (same greedy tokens: "
          f"{'yes' if torch.equal(ours_tokens.cpu(), hf_tokens.cpu()) else 'no'})")


if __name__ == "__main__":
    main()
