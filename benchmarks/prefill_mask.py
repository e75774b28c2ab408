"""What dropping the explicit mask from an empty-cache prefill buys: SDPA with the boolean causal
mask the cache path used to build, beside SDPA with is_causal=True, in one run.

Two levels, at each prompt length: the attention call alone at Llama-3.2-1B's shapes (32 query
heads, 8 KV heads, head_dim 64, batch 1), and a whole prefill through the cache of
llama-3.2-1b cut to --layers layers (random weights), where the old path is replayed by
turning is_causal back into the mask. Medians of --runs interleaved pairs; ratio = masked time
/ is_causal time (above 1: the mask costs that much more).

    python benchmarks/prefill_mask.py [--lengths 128,1024] [--runs 5] [--layers 2] [--dtype fp32]
"""

from __future__ import annotations

import argparse
import statistics
import time
from unittest import mock

import torch
import torch.nn.functional as F

from archscope.nn import build_model
from archscope.nn.cache import attention_mask
from archscope.spec import load_spec

SDPA = F.scaled_dot_product_attention
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def masked_sdpa(*args, is_causal=False, **kwargs):
    """The pre-change call: the mask LayerCache's positions gave, built on every call."""
    if is_causal:
        pos = torch.arange(args[0].shape[-2])
        kwargs["attn_mask"] = attention_mask(pos, pos, None)
    return SDPA(*args, **kwargs)


def paired(run_masked, run_causal, runs: int) -> tuple[float, float]:
    run_masked(), run_causal()  # warm up
    masked, causal = [], []
    for _ in range(runs):  # interleaved, so drift hits both alike
        for fn, out in ((run_masked, masked), (run_causal, causal)):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    return statistics.median(masked), statistics.median(causal)


def attention_only(n: int, dtype, runs: int) -> tuple[float, float]:
    q = torch.randn(1, 32, n, 64, dtype=dtype)
    k, v = torch.randn(1, 8, n, 64, dtype=dtype), torch.randn(1, 8, n, 64, dtype=dtype)
    kw = dict(scale=0.125, enable_gqa=True)
    return paired(lambda: masked_sdpa(q, k, v, is_causal=True, **kw),
                  lambda: SDPA(q, k, v, is_causal=True, **kw), runs)


def whole_prefill(n: int, dtype, runs: int, layers: int) -> tuple[float, float]:
    torch.manual_seed(0)
    model = build_model(load_spec("llama-3.2-1b", [f"n_layers={layers}"]), dtype=dtype).eval()
    ids = torch.randint(0, 1000, (1, n))

    def prefill():
        with torch.no_grad():
            model(ids, model.new_cache(1, n), last_only=True)

    def prefill_masked():
        with mock.patch.object(F, "scaled_dot_product_attention", masked_sdpa):
            prefill()

    return paired(prefill_masked, prefill, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="128,1024")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dtype", choices=list(DTYPES), default="fp32")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.dtype}, "
          f"median of {args.runs} interleaved pairs")
    print(f"{'tokens':>7}  {'what':<28} {'masked ms':>10} {'is_causal ms':>13} {'ratio':>6}")
    for n in map(int, args.lengths.split(",")):
        for what, (m, c) in (("attention (1B shapes)", attention_only(n, dtype, args.runs)),
                             (f"prefill, {args.layers} layers of 1B",
                              whole_prefill(n, dtype, args.runs, args.layers))):
            print(f"{n:>7}  {what:<28} {m * 1e3:>10.1f} {c * 1e3:>13.1f} {m / c:>6.2f}")


if __name__ == "__main__":
    main()
