"""`archscope fit` on cases worked out by hand; the arithmetic is in the comments.

GB = 10^9 bytes. h100-sxm: 80 GB, 3.35 TB/s, 989.5 TFLOP/s dense bf16 (catalog.yaml); the
default achievable fractions 0.8 of bandwidth and 0.75 of compute (achievable.yaml); usable
memory 0.9 x 80e9 = 72e9 bytes (vLLM's --gpu-memory-utilization default).
"""

from __future__ import annotations

import pytest

from archscope.estimate.fit import Setup, fit
from archscope.estimate.formats import weights_in_format
from archscope.estimate.parallel import split
from archscope.hardware import catalog_part
from archscope.spec import load_spec

H100 = catalog_part("h100-sxm")


def test_llama_3_1_8b_bf16_on_one_h100_at_8192():
    f = fit(load_spec("llama-3.1-8b"), H100, Setup(context=8192))
    # weights: 8,030,261,248 parameters x 2 bytes
    assert f.split.weights_bytes_per_gpu == 8_030_261_248 * 2 == 16_060_522_496
    # usable 72e9; left for the cache 72,000,000,000 - 16,060,522,496
    assert f.cache_budget_bytes_per_gpu == 55_939_477_504
    # KV per token: 32 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes = 131,072;
    # x 8,192 tokens (512 whole 16-token blocks) = 1,073,741,824
    assert f.cache_bytes_per_sequence == 32 * 2 * 8 * 128 * 2 * 8192 == 1_073_741_824
    # 55,939,477,504 // 1,073,741,824 = 52 (52 x = 55,834,574,848; 53 x = 56,908,316,672)
    assert f.max_concurrent_sequences == 52
    # one sequence could hold 55,939,477,504 / 131,072 = 426,784 tokens: the model's 131,072
    assert (f.max_context, f.max_context_limit) == (131_072, "model")
    # decode step: every weight but the embedding table (128,256 x 4,096 x 2 = 1,050,673,152)
    # + the cache: 15,009,849,344 + 1,073,741,824 = 16,083,591,168 bytes / (0.8 x 3.35e12)
    assert f.decode.bytes == 16_083_591_168
    assert f.decode.memory_s == pytest.approx(16_083_591_168 / 2.68e12)  # 6.0013 ms
    # + the kernel gaps (achievable.yaml latency): one CUDA-graph replay 15 us + 32 layers x
    # 15 kernels x 0.58 us = 293.4 us; one GPU: no collective
    assert f.decode.latency_s == pytest.approx(15e-6 + 32 * 15 * 0.58e-6)
    assert f.decode.collective_s == 0
    assert f.decode.seconds == pytest.approx(16_083_591_168 / 2.68e12 + 293.4e-6)  # 6.2947 ms
    assert f.decode.bound == "memory" and f.prefill.bound == "compute"
    assert f.fits


def test_qwen3_30b_a3b_fp8_reads_the_active_experts_only():
    spec = load_spec("qwen3-30b-a3b")
    sp = split(spec, 1, 1, "fp8")
    # routed experts: 48 layers x 128 experts x 3 matrices (gate, up 768 x 2,048; down
    # 2,048 x 768), each 1,572,864 fp8 bytes + one 4-byte fp32 scale = 1,572,868
    experts = 48 * 128 * 3 * (768 * 2048 + 4)
    assert sp.expert_bytes_per_gpu == experts == 28_991_102_976
    total = weights_in_format(spec, "fp8").total_bytes
    assert sp.weights_bytes_per_gpu == total
    embedding = 151_936 * 2048 * 2  # bf16, read by row: not in the bandwidth term
    rest = total - experts - embedding
    # batch 1: top_k 8 of 128 experts -> 1/16 of the expert bytes
    assert sp.weights_read_bytes(1) == pytest.approx(rest + experts * 8 / 128)
    # batch 32: expected distinct experts 128 (1 - (1 - 8/128)^32) = 111.8 -> 87.4% of them
    assert sp.weights_read_bytes(32) == pytest.approx(rest + experts * (1 - (15 / 16) ** 32))
    # the total (31.2 GB) is what must fit; a batch-1 step reads the active share (3.4 GB)
    # and the cache (48 layers x 2 x 4 KV heads x 128 x 2 bytes x 8,192 = 805,306,368)
    f = fit(spec, H100, Setup(weight_format="fp8", context=8192))
    assert f.split.weights_bytes_per_gpu == total
    assert f.decode.bytes == pytest.approx(sp.weights_read_bytes(1) + 805_306_368)


def test_gpt_oss_20b_mxfp4_quantizes_only_the_experts():
    w = weights_in_format(load_spec("gpt-oss-20b"), "mxfp4-experts")
    # experts: 24 layers x 32 experts x 3 matrices of 2,880 x 2,880 in MXFP4: a row is
    # 2,880 / 32 = 90 blocks of 17 bytes (16 bytes of e2m1 + one e8m0 scale) = 1,530 bytes
    experts = 24 * 32 * 3 * 2880 * 1530
    assert w.by_role["experts"] == experts == 10_152_345_600
    # everything else (20,914,757,184 - 19,110,297,600 expert weights) stays bf16, 2 bytes
    rest = (20_914_757_184 - 24 * 32 * 3 * 2880 * 2880) * 2
    assert w.total_bytes == experts + rest == 13_761_264_768
    assert split(load_spec("gpt-oss-20b"), 1, 1, "mxfp4-experts").weights_bytes_per_gpu == \
        w.total_bytes


def test_deepseek_v2_tp8_keeps_the_mla_latent_cache_whole_on_every_gpu():
    spec = load_spec("deepseek-v2")
    f = fit(spec, catalog_part("h200"), Setup(n_gpus=8, tp=8, context=8192))
    # MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64 = 576 values per token per layer,
    # shared by all 128 heads: it cannot be split by heads, so each of the 8 GPUs holds all of
    # it: 60 layers x 576 x 2 bytes x 8,192 = 566,231,040 bytes per sequence on EVERY GPU
    assert f.cache_bytes_per_sequence == 60 * 576 * 2 * 8192 == 566_231_040
    assert f.cache_bytes_per_sequence == f.model_cache_bytes_per_sequence
    # weights: the latent projections, the router and the norms are replicated (R bytes on every
    # GPU), everything else split 8 ways: per GPU = (total - R) / 8 + R
    replicated = (60 * (1536 + 576) * 5120 + 59 * 160 * 5120
                  + 60 * (2 * 5120 + 1536 + 512) + 5120) * 2
    total = 235_741_434_880 * 2
    assert f.split.weights_bytes_per_gpu == (total - replicated) // 8 + replicated
    assert {"q_a_proj", "kv_a_proj_with_mqa", "router"} <= set(f.split.replicated)


def test_a_sliding_window_cache_stops_growing():
    spec = load_spec("mistral-7b-v0.1")  # every layer a 4,096-token window, max_seq_len 32,768
    at_window = fit(spec, H100, Setup(context=4096))
    at_max = fit(spec, H100, Setup(context=32768))
    # 32 layers x 2 x 8 KV heads x 128 x 2 bytes x min(context, 4,096) = 536,870,912 either way
    assert at_window.cache_bytes_per_sequence == at_max.cache_bytes_per_sequence == 536_870_912
    assert (at_max.max_context, at_max.max_context_limit) == (32_768, "model")


def test_a_hybrid_cache_grows_in_its_attention_layers_only():
    spec = load_spec("nemotron-h-8b")  # 4 attention layers (GQA 8 x 128) and 24 Mamba-2 layers
    short = fit(spec, H100, Setup(context=1024))
    long = fit(spec, H100, Setup(context=8192))
    # state per sequence, constant: 24 layers x (conv 10,240 channels x 4 taps x 2 bytes
    # + SSM 128 heads x 64 x 128 x 4 bytes) = 24 x 4,276,224 = 102,629,376
    assert short.state_bytes_per_sequence == long.state_bytes_per_sequence == 102_629_376
    # KV: 4 layers x 2 x 8 x 128 x 2 bytes = 16,384 per token
    assert long.kv_bytes_per_sequence - short.kv_bytes_per_sequence == 16_384 * (8192 - 1024)


def test_llama_3_1_8b_q4_k_m_is_within_3_percent_of_the_published_gguf():
    # bartowski/Meta-Llama-3.1-8B-Instruct-GGUF, README file table:
    # "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf | Q4_K_M | 4.92GB"
    # (https://huggingface.co/bartowski/Meta-Llama-3.1-8B-Instruct-GGUF)
    f = fit(load_spec("llama-3.1-8b"), H100, Setup(weight_format="q4_k_m", context=8192))
    assert f.split.weights_bytes_per_gpu == pytest.approx(4.92e9, rel=0.03)
