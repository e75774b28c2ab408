"""A decode step's attention on the CPU: SDPA against archscope's one_query, side by side.

One query per sequence (batch 1) over a cache of S keys, at llama-3.2-1b's shape by default
(32 query heads over 8 KV heads of 64): torch's scaled_dot_product_attention (enable_gqa) and
archscope.nn.attention.one_query, each the fastest of --calls after a warm-up, the two
alternating. Also printed: each one's largest difference from the same product in fp64, the
error SDPA's own result carries being the bar one_query has to meet.

    python benchmarks/decode_attention.py [--keys 140,1100] [--dtypes bf16,fp32] [--threads 2]
"""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F

from archscope.measure.timing import to_torch_dtype
from archscope.nn.attention import one_query

from common import fastest  # benchmarks/common.py, beside this script


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keys", default="140,1100")
    p.add_argument("--dtypes", default="bf16,fp32")
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    g = torch.Generator().manual_seed(0)
    print(f"{a.heads} query heads over {a.kv_heads} KV heads of {a.head_dim}, batch 1, "
          f"{a.threads} threads, torch {torch.__version__}; fastest of {a.calls} calls")
    for dtype in a.dtypes.split(","):
        for keys in (int(k) for k in a.keys.split(",")):
            q = torch.randn(1, a.heads, 1, a.head_dim, generator=g)
            k = torch.randn(1, a.kv_heads, keys, a.head_dim, generator=g)
            v = torch.randn(1, a.kv_heads, keys, a.head_dim, generator=g)
            q, k, v = (t.to(to_torch_dtype(dtype)) for t in (q, k, v))
            scale = a.head_dim ** -0.5
            exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                   scale=scale, enable_gqa=True)
            ways = {"sdpa": lambda: F.scaled_dot_product_attention(q, k, v, scale=scale,
                                                                   enable_gqa=True),
                    "one_query": lambda: one_query(q, k, v, scale)}
            best = dict.fromkeys(ways, float("inf"))
            for _ in range(3):  # alternate; each keeps its best
                for name, call in ways.items():
                    best[name] = min(best[name], fastest(call, a.calls, warmup=10))
            errors = {name: (call().double() - exact).abs().max().item()
                      for name, call in ways.items()}
            print(f"{dtype} {keys:>6} keys: sdpa {1e6 * best['sdpa']:8.1f} us, one_query "
                  f"{1e6 * best['one_query']:8.1f} us (x{best['sdpa'] / best['one_query']:.1f}); "
                  f"max error vs fp64: sdpa {errors['sdpa']:.1e}, one_query "
                  f"{errors['one_query']:.1e}")


if __name__ == "__main__":
    main()
