"""The decode benchmark users run on a GPU (`--device cuda --step compile`) runs end to end on
the CPU as a dry run (`--device cpu`): a shrunken model, one case, one pair, the compiled step,
its JSON written where asked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHRINK = ["--set", "d_model=128", "--set", "attention.n_heads=4", "--set",
          "attention.n_kv_heads=2", "--set", "attention.head_dim=32", "--set", "ffn.d_ff=256",
          "--set", "vocab_size=512"]


@pytest.mark.slow
def test_the_cuda_decode_benchmark_dry_runs_on_the_cpu(tmp_path):
    out = tmp_path / "sub" / "decode.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "decode_vs_hf.py"), "--device", "cpu",
         "--step", "compile", "--layers", "1", *SHRINK, "--cases", "decode:b1:p128:fp32",
         "--runs", "1", "--new-tokens", "3", "--json", str(out)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.read_text())
    assert record["command"].startswith("python benchmarks/decode_vs_hf.py --device cpu ")
    assert (record["device"], record["step"], record["gpu_name"]) == ("cpu", "compile", None)
    (case,) = record["results"]
    assert case["case"] == "decode:b1:p128:fp32" and case["same_tokens"]
    # the one timed run is a rate, or (a shared machine's hiccup) a measurement error naming it
    assert case["archscope_tokens_per_s"] or any("archscope" in e for e in case["errors"])
    # each kept run beside a pass over the model's own weight matrices, fused by the compiled
    # step: qkv (128 + 64 + 64) x 128, o 128 x 128, gate_up 512 x 128, down 128 x 256, and the
    # lm_head 512 x 128 (tied to the embedding, read once), fp32
    fused = 256 * 128 + 128 * 128 + 512 * 128 + 128 * 256 + 512 * 128
    assert case["own_products_bytes"] == 4 * fused
    assert len(case["fraction_of_own_products"]) == len(case["archscope_tokens_per_s"])
