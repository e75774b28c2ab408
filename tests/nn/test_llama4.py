"""Llama 4 (llama4_text) against transformers' own Llama4ForCausalLM, beyond the conformance
cases' parity: a tiny config with chunks of 4, RoPE/chunked and NoPE/full layers (temperature
tuning with floor 2, so it matters from the second token), MoE and dense layers, built both ways
with the same weights; a multi-token continuation after a cached prefix and device-side
positions crossing chunk boundaries, fp32. Negative controls: the same weights without the
chunk mask, without the temperature, with half-split RoPE or with the router weight on the
experts' output are far off. Also the keys a chunked layer reads and holds, decode FLOPs, the
prefill FLOPs transformers' every-expert loop adds, and the preset's parameters on the meta
device.
"""

import pytest
import torch

from archscope.estimate import decode_flops, prefill_flops
from parity import (checked_preset, decode_stepwise, hf_eager_prefill_flops, load_same_weights,
                    max_diff, tiny_spec, twin_case)

TOL = 1e-4
T, PREFILL, CHUNK = 22, 9, 4
MOE = dict(kind="moe", n_experts=4, top_k=1, d_expert=32, n_shared_experts=1,
           router=dict(scoring="sigmoid", normalize=False, weights="input"))
NOPE = dict(rope=False, qk_norm=None, chunk=None, temperature_floor=2, temperature_scale=0.5)
# layers: 0 RoPE/chunked/MoE, 1 NoPE/full/dense, 2 RoPE/chunked/dense, 3 NoPE/full/MoE
L4 = dict(n_layers=4, position=dict(kind="rope", theta=10000.0, interleaved=True),
          attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16, chunk=CHUNK,
                         qk_norm="l2"),
          ffn=MOE, layers=[dict(select=[1, 3], attention=NOPE),
                           dict(select=[1, 2], ffn=dict(kind="swiglu", d_ff=48))])


@pytest.fixture(scope="module")
def setup():
    return twin_case(tiny_spec(**L4), T)


def test_transformers_builds_llama4_with_our_layers(setup):
    spec, hf, _, _, _ = setup
    assert type(hf).__name__ == "Llama4ForCausalLM"
    assert hf.config.layer_types == [layer.layer_type for layer in spec.plan] == \
        ["chunked_attention", "full_attention"] * 2
    assert hf.config.no_rope_layers == [1, 0, 1, 0] and hf.config.moe_layers == [0, 3]
    assert [hasattr(layer.self_attn, "qk_norm") for layer in hf.model.layers] == [1, 0, 1, 0]


@torch.no_grad()
def test_continuation_and_device_positions_match(setup):
    """A 5-token call after a cached prefix (masks over old and new slots), then single steps
    with the position on the device (every slot read, masked by position and chunk)."""
    _, _, ours, ids, reference = setup
    cache = ours.new_cache(2, T)
    outs = [ours(ids[:, :PREFILL], cache), ours(ids[:, PREFILL:14], cache)]
    cache.keep_length_on_device()
    outs += [ours(ids[:, i:i + 1], cache) for i in range(14, T)]
    assert max_diff(torch.cat(outs, dim=1), reference) < TOL


@pytest.mark.parametrize("what, change", [
    ("chunk mask", dict(attention={**L4["attention"], "chunk": None})),
    ("temperature", dict(layers=[dict(select=[1, 3], attention=dict(
        rope=False, qk_norm=None, chunk=None)), L4["layers"][1]])),
    ("adjacent pairs", dict(position=dict(kind="rope", theta=10000.0))),
    ("input weights", dict(ffn={**MOE, "router": dict(scoring="sigmoid", normalize=False)})),
])
def test_dropping_a_feature_breaks_parity(setup, what, change):
    """The same weights without one Llama 4 feature: far off (the chunk mask's absence also
    through the cached decode, where the single-token path would otherwise read it)."""
    _, hf, _, ids, reference = setup
    model = load_same_weights(tiny_spec(**{**L4, **change}), hf, "llama4_text")
    with torch.no_grad():
        assert max_diff(model(ids), reference) > 0.1, what
    if what == "chunk mask":
        assert max_diff(decode_stepwise(model, ids, prefill=PREFILL), reference) > 0.1


def test_decode_reads_the_current_chunk():
    spec = tiny_spec(**L4)
    chunked, full = spec.plan[0].attention, spec.plan[1].attention
    assert [chunked.keys_read(n) for n in range(1, 11)] == [1, 2, 3, 4, 1, 2, 3, 4, 1, 2]
    assert chunked.tokens_held(10) == CHUNK and full.keys_read(10) == 10
    pairs = (10 % CHUNK or CHUNK) + 10  # one chunked and one full layer per pair of layers
    per_pair = 2 * 4 * 16  # 2 FLOPs x heads x head_dim
    assert decode_flops(spec, 10).by_component["attention_qk"] == 2 * pairs * per_pair
    causal = 2 * ((10 + 10 + 3) + 55)  # chunks of 4, 4, 2: 10 + 10 + 3 pairs; full: 55
    assert prefill_flops(spec, 10).by_component["attention_qk"] == causal * per_pair


def test_prefill_flops_match_transformers(setup):
    """transformers' Llama4TextExperts runs every expert on every token (the unchosen ones on
    a zero-weighted input); the estimate counts top_k. The difference is exactly the other
    n_experts - top_k experts' matmuls, and with one expert the counts are equal."""
    spec = setup[0]
    estimate = prefill_flops(spec, 10, batch=2, attention="full").total
    moe_layers = sum(layer.is_moe for layer in spec.plan)
    unchosen = moe_layers * (4 - 1) * 2 * (2 * 10) * 3 * 64 * 32  # 2 FLOPs, 3 matrices d x f
    assert hf_eager_prefill_flops(spec) == estimate + unchosen
    one = tiny_spec(**{**L4, "ffn": {**MOE, "n_experts": 1}})
    assert hf_eager_prefill_flops(one) == prefill_flops(one, 10, batch=2, attention="full").total


def test_a_chunked_layer_holds_one_chunk(setup):
    _, _, ours, _, _ = setup
    assert [layer.capacity for layer in ours.new_cache(1, 2 * T).layers] == [CHUNK, 2 * T] * 2


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    spec, p, theirs = checked_preset("llama-4-scout", "Llama4ForCausalLM")
    assert theirs.config.no_rope_layers == [1, 1, 1, 0] * 12
    assert theirs.config.layer_types == [layer.layer_type for layer in spec.plan]
    assert (p.total, p.active) == (107_769_861_120, 17_172_894_720)
