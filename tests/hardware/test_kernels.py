"""The local CPU priced at a model's own kernels: the shapes (checked against the built model's
linear layers), the arithmetic of the effective rates, and fit / profile using them."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from archscope.estimate.fit import Setup, fit
from archscope.estimate.kernel_shapes import workload
from archscope.hardware import kernels, probe_cpu
from archscope.nn import build_model
from archscope.nn import linear as dense
from archscope.nn.linear import packing_unavailable
from archscope.spec import load_spec
from tests.parity import tiny_spec

needs_onednn = pytest.mark.skipif(not torch.backends.mkldnn.is_available(),
                                  reason="this torch has no oneDNN")
needs_packing = pytest.mark.skipif(packing_unavailable() is not None,
                                   reason=f"no packed bf16 weights here: {packing_unavailable()}")


def _module_shapes(spec) -> Counter:
    """(rows, cols) -> count of the matmuls one forward of the built model runs: its
    nn.Linear weights, the lm_head's being the embedding's when tied."""
    model = build_model(spec, device="meta")
    shapes = Counter(tuple(m.weight.shape) for m in model.modules()
                     if isinstance(m, torch.nn.Linear))
    return shapes


@pytest.mark.parametrize("spec", [
    load_spec("llama-3.2-1b", ["n_layers=2"]),  # tied head, GQA, SwiGLU
    load_spec("gpt2", ["n_layers=2"]),  # tied, with biases and learned positions
    load_spec("qwen3-8b", ["n_layers=2"]),  # untied head
    load_spec("deepseek-v2-lite", ["n_layers=2"]),  # MLA latents
], ids=lambda s: s.name)
def test_the_decode_shapes_are_the_built_models_matmuls(spec):
    ours = workload(spec, "fp32", batch=1, prompt_len=8)
    built = _module_shapes(spec)
    routed = {(m.rows, m.cols) for m in ours.decode if m.count != int(m.count)}
    assert not routed  # batch 1 reads exactly top_k experts: whole counts
    if spec.plan[-1].ffn.kind == "moe":
        # routed experts and the router are stored as parameters, not nn.Linear: compare the
        # rest (the experts' top_k count is checked below)
        layer = spec.plan[-1].ffn
        expert = {(layer.d_expert, spec.d_model), (spec.d_model, layer.d_expert),
                  (layer.n_experts, spec.d_model)}
        dense = Counter({(m.rows, m.cols): m.count for m in ours.decode})
        for shape in expert:
            dense.pop(shape, None)
            built.pop(shape, None)
        assert dense == built
    else:
        assert Counter({(m.rows, m.cols): m.count for m in ours.decode}) == built


def test_prefill_feeds_the_prompt_to_every_matmul_but_the_head():
    spec = tiny_spec()
    w = workload(spec, "fp32", batch=2, prompt_len=5)
    head = (spec.vocab_size, spec.d_model)
    assert {m.tokens for m in w.decode} == {2}
    assert {(m.rows, m.cols): m.tokens for m in w.prefill}[head] == 2  # last position only
    assert {m.tokens for m in w.prefill if (m.rows, m.cols) != head} == {10}


def test_routed_experts_read_top_k_at_batch_1_and_the_expected_distinct_ones_after():
    spec = tiny_spec(ffn=dict(kind="moe", n_experts=8, top_k=2, d_expert=32))
    experts = lambda phase: sum(m.count for m in phase if m.cols == 32)  # the down_proj rows
    one = workload(spec, "fp32", batch=1, prompt_len=4)
    assert experts(one.decode) == 2 * 2  # 2 layers x top_k
    expected = 8 * (1 - (1 - 2 / 8) ** 4)  # distinct experts 4 tokens touch
    assert experts(workload(spec, "fp32", batch=4, prompt_len=4).decode) == pytest.approx(
        2 * expected)


def test_the_effective_rates_are_bytes_and_flops_over_the_summed_kernel_times(monkeypatch):
    # a fake machine: each matmul takes max(bytes / 10 GB/s, flops / 50 GFLOP/s)
    fake = lambda rows, cols, tokens, dtype, device="cpu", *kernel, **rivals: max(
        rows * cols * 4 / 10e9, 2 * tokens * rows * cols / 50e9)
    monkeypatch.setattr(kernels, "linear_seconds", fake)
    w = workload(load_spec("llama-3.2-1b", ["n_layers=2"]), "fp32", batch=1, prompt_len=512)
    r = kernels.measure(w)
    assert r.decode_bytes_per_s == pytest.approx(10e9)  # every decode matmul is memory-bound
    head = max(w.prefill, key=lambda m: m.rows)  # the 128k-row head: one token, memory-bound
    rest = sum(2 * m.count * m.tokens * m.rows * m.cols for m in w.prefill if m is not head)
    head_s = head.rows * head.cols * 4 / 10e9
    flops = rest + 2 * head.tokens * head.rows * head.cols
    assert r.prefill_flops_per_s == pytest.approx(flops / (rest / 50e9 + head_s))


def test_a_probe_too_large_to_run_whole_is_cut_and_scaled(monkeypatch):
    probed = []

    def one_ms(fn, device, calls=1):  # the probed kernel "takes" 1 ms, whatever its shape
        fn()
        return 1e-3

    real = torch.nn.functional.linear  # what the probe times: F.linear, the aten candidate
    monkeypatch.setattr(dense, "plain_kernels", lambda dtype: {
        "aten": lambda x, w, b: probed.append((x.shape[0], *w.shape)) or real(x, w, b)})
    monkeypatch.setattr(kernels, "_best", one_ms)
    monkeypatch.setattr(kernels, "MAX_COPY_BYTES", 64 * 64 * 4)
    monkeypatch.setattr(kernels, "MAX_MATMUL_FLOPS", 2 * 64 * 256 * 64)
    kernels.forget()
    try:
        # 64x the rows a probe may hold: 64 rows probed, the time scaled by 64
        assert kernels.linear_seconds(64 * 64, 64, 1, "fp32") == pytest.approx(64e-3)
        assert probed[-1] == (1, 64, 64)
        # and 1,024 prompt rows over the work budget: 256 of them probed, scaled by 16 x 4
        assert kernels.linear_seconds(1024, 64, 1024, "fp32") == pytest.approx(64e-3)
        assert probed[-1] == (256, 64, 64)
    finally:
        kernels.forget()


def test_the_decode_probe_cycles_through_as_many_weight_bytes_as_a_step_reads(monkeypatch):
    # a toy model's weights stay in the caches from one step to the next, a large one's do not:
    # the probe's copies add up to the step's bytes, at most FLUSH_BYTES (beyond any cache)
    made = []
    monkeypatch.setattr(kernels, "_layers", lambda rows, cols, dtype, device, kernel, copies,
                        impl: made.append(copies) or [lambda x: x] * copies)
    monkeypatch.setattr(kernels, "_best", lambda fn, device, calls=1: fn() or 1e-3)
    matrix = 64 * 64 * 4
    kernels.forget()
    try:
        kernels.linear_seconds(64, 64, 1, "fp32", step_bytes=10 * matrix)  # ten such a step
        kernels.linear_seconds(64, 64, 1, "fp32", step_bytes=1 << 40)  # a terabyte model
        kernels.linear_seconds(64, 64, 1, "fp32")  # no model named: the same, already timed
        kernels.linear_seconds(64, 64, 64, "fp32", step_bytes=1 << 40)  # compute-bound rows
    finally:
        kernels.forget()
    assert made == [10, kernels.FLUSH_BYTES // matrix, 1]


def test_measure_probes_each_shape_at_the_steps_weight_bytes(monkeypatch):
    seen = set()
    monkeypatch.setattr(kernels, "linear_seconds",
                        lambda rows, cols, tokens, dtype, device, kernel, nbytes, step_bytes,
                        impl, **rivals: seen.add(step_bytes) or 1e-3)
    w = workload(tiny_spec(), "fp32", batch=1, prompt_len=8)
    kernels.measure(w)
    assert seen == {sum(m.count * m.nbytes for m in w.decode)}


def test_fit_on_the_cpu_is_priced_at_the_models_kernels(monkeypatch):
    monkeypatch.setattr(kernels, "linear_seconds",
                        lambda rows, cols, tokens, dtype, device="cpu", *kernel, **rivals:
                        rows * cols * 4 / 7e9)
    spec = load_spec("llama-3.2-1b", ["n_layers=2"])
    result = fit(spec, probe_cpu(), Setup(context=64, weight_format="fp32", kv_dtype="fp32",
                                          bandwidth_fraction=1.0, compute_fraction=1.0))
    assert result.rates.bytes_per_s == pytest.approx(7e9)
    assert "this model's kernels" in result.hardware.notes


def test_a_quantized_format_counts_its_bytes_and_names_its_kernel():
    spec = load_spec("llama-3.2-1b", ["n_layers=2"])
    dense = workload(spec, "bf16", batch=1, prompt_len=8)
    int8 = workload(spec, "bf16", batch=1, prompt_len=8, weight_format="int8")
    head = (spec.vocab_size, spec.d_model)
    for m in int8.decode:
        if (m.rows, m.cols) == head:  # the tied head stays in 16 bits (formats.py)
            assert m.kernel is None and m.nbytes == 2 * m.rows * m.cols
        else:  # one byte a weight and a 16-bit scale per output row (storage.INT8)
            assert m.kernel == "int8" and m.nbytes == m.rows * m.cols + 2 * m.rows
    assert sum(m.count * m.nbytes for m in dense.decode) == sum(
        m.count * 2 * m.rows * m.cols for m in dense.decode)


def test_the_quantized_probe_runs_the_quantized_kernel(monkeypatch):
    from archscope.nn import quantized

    called = []
    real = quantized.QuantizedLinear.random
    monkeypatch.setattr(quantized.QuantizedLinear, "random",
                        classmethod(lambda cls, *a, **k: called.append(a[:3]) or real(*a, **k)))
    kernels.forget()
    try:
        assert kernels.linear_seconds(256, 256, 1, "bf16", "cpu", "int8", 256 * 258,
                                      step_bytes=4 * 256 * 258) > 0  # four copies
    finally:
        kernels.forget()
    assert called and called[0] == (256, 256, "int8")


def test_retime_keeps_each_shapes_fastest_time(monkeypatch):
    times = iter([3.0, 5.0, 1.0, 4.0])  # shape a: 3 then 1; shape b: 5 then 4
    monkeypatch.setattr(kernels, "_time_linear", lambda *key: next(times))
    kernels.forget()
    try:
        assert kernels.linear_seconds(8, 8, 1, "fp32") == 3.0
        assert kernels.linear_seconds(16, 8, 1, "fp32") == 5.0
        assert kernels.linear_seconds(8, 8, 1, "fp32") == 3.0  # timed once per process
        kernels.retime()
        assert kernels.linear_seconds(8, 8, 1, "fp32") == 1.0
        assert kernels.linear_seconds(16, 8, 1, "fp32") == 4.0
        monkeypatch.setattr(kernels, "_time_linear", lambda *key: 9.0)
        kernels.retime()  # a slower round changes nothing
        assert kernels.linear_seconds(8, 8, 1, "fp32") == 1.0
    finally:
        kernels.forget()


@needs_packing
def test_a_packed_run_is_priced_on_packed_kernels(monkeypatch):
    from archscope.nn import linear as dense_linear

    packed = []  # each layer the probe made packed, its weight's shape
    real = dense_linear.packed_layer
    monkeypatch.setattr(dense_linear, "packed_layer",
                        lambda w: packed.append(tuple(w.shape)) or real(w))
    kernels.forget()
    try:
        plain = kernels.linear_seconds(64, 64, 1, "bf16", step_bytes=64 * 64 * 2 * 4)
        assert packed == []
        kernels.linear_seconds(64, 64, 1, "bf16", step_bytes=64 * 64 * 2 * 4, impl="packed")
        assert packed == [(64, 64)] * 4 and plain > 0  # its four copies, each packed
        with pytest.raises(ValueError, match="no packed layout"):  # fp32 is never packed
            kernels.linear_seconds(64, 64, 1, "fp32", step_bytes=64 * 64 * 4, impl="packed")
    finally:
        kernels.forget()


def _timed_as(monkeypatch, seconds: dict[str, float]):
    """A fake machine on which each kernel takes `seconds[kernel]` at every shape."""
    monkeypatch.setattr(kernels, "linear_seconds",
                        lambda rows, cols, tokens, dtype, device, kernel, nbytes, step_bytes,
                        impl, **rivals: seconds[impl])


@needs_onednn
@pytest.mark.parametrize("onednn_s, expected", [(0.5, "onednn"), (0.97, "aten"), (2.0, "aten")])
def test_measure_chooses_the_fastest_kernel_and_the_model_runs_it(monkeypatch, onednn_s,
                                                                   expected):
    """oneDNN twice as fast: chosen; 3% faster (within MARGIN, a tie) or slower: F.linear."""
    _timed_as(monkeypatch, {"aten": 1.0, "onednn": onednn_s})
    spec = tiny_spec(d_model=64, n_layers=1, vocab_size=128)
    rates = kernels.measure(workload(spec, "fp32", batch=1, prompt_len=4))
    assert {kernel for *_, kernel in rates.kernels} == {expected}
    products = sum(m.count for m in workload(spec, "fp32", 1, 4).decode)
    priced = onednn_s if expected == "onednn" else 1.0  # the roofline prices what runs
    assert rates.decode_seconds == pytest.approx(priced * products)
    model = build_model(spec, torch.device("cpu"), torch.float32)
    with torch.inference_mode(), FlopCounterMode(display=False) as counter:
        model(torch.zeros(1, 4, dtype=torch.long))  # the prefill: 4 rows, the head 1
    ran_onednn = torch.ops.archscope.onednn_linear in counter.get_flop_counts()["Global"]
    assert ran_onednn == (expected == "onednn")


def test_packed_candidates_only_where_the_run_packs_and_the_cpu_can(monkeypatch):
    from archscope.nn import linear as dense_linear

    assert "packed" not in kernels.candidates("bf16", "cpu", packed=False)
    assert "packed" not in kernels.candidates("fp32", "cpu", packed=True)
    assert kernels.candidates("bf16", "cuda", packed=True) == ("aten",)
    monkeypatch.setattr(dense_linear, "packing_unavailable", lambda: "no AVX-512 here")
    assert kernels.candidates("bf16", "cpu", packed=True) == ("aten",)
    _timed_as(monkeypatch, {"aten": 1.0})  # no packed kernel is timed, nor asked for
    rates = kernels.measure(workload(tiny_spec(), "bf16", 1, 4), packed=True)
    assert {kernel for *_, kernel in rates.kernels} == {"aten"}
