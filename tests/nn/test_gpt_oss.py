"""gpt-oss (attention sinks, alternating sliding/full layers, biased q/k/v/o, YaRN with
truncate false, a biased router and the clamped expert unit) against transformers' own
GptOssForCausalLM, beyond the conformance cases' parity (whose second case has this file's
clamp, sinks and YaRN): the layers transformers builds, decoding at a device-side position
(the step CUDA graphs capture) through the sinks' mask, and the same weights without the
sinks, without the clamp, or with the YaRN range truncated, far off, so the parity exercises
each; the presets' parameters on the meta device against the card.
"""

import copy

import pytest
import torch

from parity import checked_preset, larger_sinks, load_same_weights, max_diff, tiny_spec, twin_case

TOL = 1e-4
T, PREFILL, WINDOW = 22, 9, 4  # a 9-token prompt over a window of 4, then 13 cached steps
# head_dim 16, theta 1e4, an original context of 4096: YaRN's correction range is (2.62, 5.63),
# which truncation would round to (2, 6), so truncate false changes 4 of the 8 frequencies
YARN = dict(kind="yarn", factor=4.0, original_max_seq_len=4096, beta_fast=32.0, beta_slow=1.0,
            truncate=False)
# the clamp at 1.5 engages on the tiny model's gate and up values (std about 1.6)
OSS = dict(n_layers=2, position=dict(kind="rope", theta=10000.0, scaling=YARN),
           attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16, bias=True,
                          sinks=True),
           ffn=dict(kind="moe", n_experts=8, top_k=2, d_expert=32, activation="quick_gelu",
                    bias=True, limit=1.5, router=dict(bias=True)),
           layers=[dict(select="0::2", attention=dict(window=WINDOW))])


def _spec(**changes):
    return tiny_spec(**{**OSS, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(_spec(), T, prepare=larger_sinks)


def test_transformers_builds_gpt_oss_as_the_spec_says(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "GptOssForCausalLM"
    assert hf.config.layer_types == [layer.layer_type for layer in spec.plan] == [
        "sliding_attention", "full_attention"]
    assert [layer.self_attn.sliding_window for layer in hf.model.layers] == [WINDOW, None]
    assert hf.config.rope_parameters["truncate"] is False and hf.config.swiglu_limit == 1.5
    assert torch.equal(ours.layers[1].self_attn.sinks, hf.model.layers[1].self_attn.sinks)
    assert hf.model.layers[0].self_attn.sinks.abs().max() > 1.0


@torch.no_grad()
def test_decoding_at_a_device_position_matches(setup):
    """The fixed-shape step (cache length on the device, every slot read under a mask) that
    CUDA graphs capture: the sinks path takes the same mask."""
    _, _, ours, ids, reference = setup
    cache = ours.new_cache(ids.shape[0], ids.shape[1])
    outs = [ours(ids[:, :PREFILL], cache)]
    cache.keep_length_on_device()
    outs += [ours(ids[:, i:i + 1], cache) for i in range(PREFILL, T)]
    assert max_diff(torch.cat(outs, dim=1), reference) < TOL


def test_dropping_the_sinks_breaks_parity(setup):
    """The same weights with no sink logit in the softmax (plain SDPA): far off."""
    _, _, ours, ids, reference = setup
    other = copy.deepcopy(ours)
    for layer in other.layers:
        layer.self_attn.sinks = None
    with torch.no_grad():
        assert max_diff(other(ids), reference) > 1e-2


@pytest.mark.parametrize("change", [
    {"ffn": {**OSS["ffn"], "limit": None}},  # no clamp and no +1 on up
    {"position": {**OSS["position"], "scaling": {**YARN, "truncate": True}}},
], ids=["no-limit", "truncated-yarn"])
def test_other_settings_break_parity(setup, change):
    _, hf, _, ids, reference = setup
    other = load_same_weights(_spec(**change), hf, "gpt_oss")
    with torch.no_grad():
        assert max_diff(other(ids), reference) > 1e-3


@pytest.mark.parametrize("name, total, active", [
    ("gpt-oss-20b", 20_914_757_184, 4_187_440_704),
    ("gpt-oss-120b", 116_829_156_672, 5_711_982_912),
])
def test_preset_params_on_meta_equal_transformers_and_the_estimate(name, total, active):
    spec, p, _ = checked_preset(name, "GptOssForCausalLM")
    assert (p.total, p.active) == (total, active)
    assert p.breakdown["attention.sinks"] == spec.n_layers * 64
    # the card's active figures (3.6B, 5.1B) leave the embedding out
    assert round((p.active - p.embedding) / 1e8) == {"gpt-oss-20b": 36, "gpt-oss-120b": 51}[name]
