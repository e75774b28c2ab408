"""The terms a roofline leaves out (issue 32), worked by hand from achievable.yaml's values:
15 kernels a layer at 0.58 us each plus 15 us a step; 22 us per NVLink collective; a format's
weights at its kernels' share of bf16's bandwidth; a prefill's compute at its prompt length."""

from __future__ import annotations

import pytest

from archscope.estimate.fit import Setup, fit
from archscope.estimate.formats import weights_in_format
from archscope.hardware import catalog_part
from archscope.hardware.latency import prefill_compute
from archscope.spec import load_spec

H100 = catalog_part("h100-sxm")


def test_tensor_parallel_decode_waits_for_every_collective():
    f = fit(load_spec("llama-3.1-8b"), H100, Setup(n_gpus=8, context=8192))
    # one all-reduce after the embedding and after each of 32 x 2 sublayers, one logits gather
    assert f.split.collectives_per_step == 1 + 64 + 1
    assert f.decode.collective_latency_s == pytest.approx(66 * 22e-6)
    assert f.decode.latency_s == pytest.approx(15e-6 + 32 * 15 * 0.58e-6)
    assert f.decode.seconds == pytest.approx(
        max(f.decode.compute_s, f.decode.memory_s) + f.decode.latency_s
        + f.decode.interconnect_s + 66 * 22e-6)
    assert f.decode.bound == "collective"  # 1.45 ms of waits against 0.75 ms of reads
    row = f.row()
    assert row["decode"]["collective_latency_ms"] == pytest.approx(1.452)
    assert row["bound"]["tpot"] == "collective" and row["latency"]["collectives_per_step"] == 66


def test_a_small_model_is_latency_bound():
    """GPT-2 (124M) reads 0.25 GB a step: 0.09 ms at 2.68 TB/s, under its 12 layers' kernel
    gaps, 15 us + 12 x 15 x 0.58 us = 0.119 ms."""
    f = fit(load_spec("gpt2"), H100, Setup(context=1024))
    assert f.decode.latency_s == pytest.approx(15e-6 + 12 * 15 * 0.58e-6)
    assert f.decode.memory_s < f.decode.latency_s and f.decode.bound == "latency"


def test_a_format_reads_at_its_kernels_share_of_bandwidth():
    """int4-g128's weights at 0.54 of bf16's 2.68 TB/s; the cache at the full rate."""
    spec = load_spec("llama-3.1-8b")
    f = fit(spec, H100, Setup(weight_format="int4-g128", context=8192))
    cache = f.kv_bytes_per_sequence
    weights = f.decode.bytes - cache
    assert f.decode.memory_s == pytest.approx(weights / (0.54 * 2.68e12) + cache / 2.68e12)
    assert weights < weights_in_format(spec, "int4-g128").total_bytes  # the table is read by row


def test_prefill_compute_follows_the_prompt_length():
    assert prefill_compute(128, 0.75, False) == 0.28
    assert prefill_compute(4096, 0.70, False) == 0.70  # the part's fraction caps the curve
    assert prefill_compute(724, 0.75, False) == pytest.approx(0.57 + 0.06 * 0.5, rel=1e-3)
    assert prefill_compute(2048, 0.75, True) == pytest.approx(0.65 * 0.64)
    short = fit(load_spec("llama-3.1-8b"), H100, Setup(context=128))
    long = fit(load_spec("llama-3.1-8b"), H100, Setup(context=4096))
    assert short.prefill.flops / short.prefill.compute_s == pytest.approx(0.28 * 989.5e12)
    assert long.prefill.flops / long.prefill.compute_s == pytest.approx(0.72 * 989.5e12)


def test_the_measured_cpu_takes_no_gpu_latency():
    from archscope.estimate import fit_roofline as roof
    from archscope.hardware.achievable import achievable

    from dataclasses import replace

    probed = replace(H100, name="cpu", measured=True)  # as the probe marks this machine
    r = roof.rates(probed, "bf16", achievable("cpu"))
    assert r.latency is None and r.prefill_flops_per_s(128) == r.flops_per_s
    assert roof.rates(H100, "bf16", achievable("h100-sxm")).latency is not None
