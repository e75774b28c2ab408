"""estimate/rope.py's pure frequency table against nn/rope.py's torch frequencies, and the
llama3 bands of Llama 3.2 (wavelength limits 2,048 and 8,192 tokens)."""

from __future__ import annotations

import pytest

from archscope.estimate.rope import rope_table
from archscope.nn.rope import rope_frequencies
from archscope.spec import load_spec as load_preset


@pytest.mark.parametrize("name", ["llama-3.2-1b", "deepseek-v2", "gpt-oss-20b", "gemma-3-27b",
                                  "mistral-7b-v0.1", "qwen3-8b"])
def test_same_frequencies_as_the_torch_rotation(name):
    spec = load_preset(name)
    for layer in spec.plan:
        if layer.attention is None or not layer.attention.rope:
            continue
        dim, p = layer.attention.rotary_dim, layer.position
        pairs, _ = rope_table(dim, p.theta, p.scaling)
        torch_freq, _ = rope_frequencies(dim, p.theta, p.scaling)
        assert [q.scaled for q in pairs] == pytest.approx(torch_freq.tolist(), rel=1e-5)


def test_llama3_bands():
    spec = load_preset("llama-3.2-1b")
    pairs, bands = rope_table(64, spec.position.theta, spec.position.scaling)
    assert (bands.high_below, bands.low_above) == (2048, 8192)
    assert pairs[0].band == "high" and pairs[-1].band == "low"
    assert all((q.wavelength < 2048) == (q.band == "high") for q in pairs)
    assert all((q.wavelength > 8192) == (q.band == "low") for q in pairs)
    assert any(q.band == "medium" for q in pairs)


@pytest.mark.parametrize("name", ["llama-3.2-1b", "deepseek-v2", "gemma-3-27b", "qwen3-next-80b-a3b",
                                  "nemotron-h-8b", "granite-4.0-h-tiny"])
def test_layer_flops_sum_to_the_decode_step(name):
    """estimate/flops.decode_flops_by_layer: the layers plus lm_head are decode_flops."""
    from archscope.estimate.flops import decode_flops, decode_flops_by_layer
    spec = load_preset(name)
    for mla in ("absorbed", "recompute"):
        layers = decode_flops_by_layer(spec, 5000, mla)
        whole = decode_flops(spec, 5000, mla=mla).by_component
        for key, value in whole.items():
            assert sum(layer.get(key, 0) for layer in layers) == (0 if key == "lm_head" else value)


def test_every_kind_explains_every_preset():
    """kinds' explain wording runs on every component of every preset."""
    from archscope.kinds import attention_kind, ffn_kind, mixer_kind
    from archscope.spec import preset_names
    for name in preset_names():
        spec = load_preset(name)
        for layer in spec.plan:
            for comp, lookup in ((layer.attention, attention_kind), (layer.ffn, ffn_kind),
                                 (layer.state, mixer_kind)):
                if comp is not None:
                    assert lookup(comp.kind).explain(comp, spec.d_model)


def test_longrope_table_is_the_long_rotation():
    """A LongRoPE table's scaled frequencies are the ones nn/rope.py rotates with past the
    original context (the long factors'), its bands the short and long factors' spans."""
    from archscope.nn.rope import longrope_inv_freq
    from parity import tiny_spec

    spec = tiny_spec(position=dict(kind="rope", theta=1e4, scaling=dict(
        kind="longrope", factor=8.0, original_max_seq_len=8,
        short_factor=[1.0, 1.3, 2.1, 3.7, 4.0, 5.0, 6.0, 7.5],
        long_factor=[1.1, 2.5, 6.0, 14.0, 20.0, 30.0, 40.0, 60.0])))
    s, dim = spec.position.scaling, spec.attention.rotary_dim
    pairs, bands = rope_table(dim, 1e4, s)
    assert [q.scaled for q in pairs] == pytest.approx(
        longrope_inv_freq(dim, 1e4, s.long_factor).tolist(), rel=1e-6)
    assert [q.base / q.scaled for q in pairs] == pytest.approx(list(s.long_factor))
    assert bands.spans == (1.0, 7.5, 1.1, 60.0, pytest.approx((1 + 1) ** 0.5))
