"""DeepSeek-V3 (DeepSeek-V2's MLA, shared experts and dense first layers + a sigmoid noaux_tc
router with a selection-only correction bias) against transformers' DeepseekV3ForCausalLM, on
a tiny config with a random correction bias, normalised and not: the routing varies and the
bias moves it, and the same weights with the bias left out of the choice or the other
normalisation are far off (the parity itself, prefill and cached decoding, FLOPs, cache and
active parameters, is the conformance cases'); the full-size presets' parameters on the meta
device (total and active) against their stated figures.
"""

import copy

import pytest
import torch

from parity import (checked_preset, load_same_weights, max_diff, random_correction_bias, routed,
                    tiny_spec, twin_case)

T = 20
_YARN = {"kind": "yarn", "factor": 4.0, "original_max_seq_len": 32, "beta_fast": 32.0,
         "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0}


def _spec(normalize: bool = True):
    """3 layers, the first dense (first_k_dense_replace 1); 16 experts in 4 groups, 2 eligible."""
    return tiny_spec(
        n_layers=3, max_seq_len=128, norm=dict(kind="rmsnorm", eps=1e-6),
        position=dict(kind="rope", theta=10000.0, scaling=_YARN),
        attention=dict(kind="mla", n_heads=4, q_lora_rank=24, kv_lora_rank=32,
                       qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=12),
        ffn=dict(kind="moe", n_experts=16, top_k=4, d_expert=32, n_shared_experts=1,
                 router=dict(method="noaux_tc", scoring="sigmoid", correction_bias=True,
                             n_group=4, topk_group=2, normalize=normalize,
                             scaling_factor=2.5)),
        layers=[dict(select="0:1", ffn=dict(kind="swiglu", d_ff=96))])


@pytest.fixture(scope="module", params=[True, False], ids=["normalize", "plain"])
def family(request):
    # a random correction bias, which hf_model leaves at zero (parity.random_correction_bias)
    return twin_case(_spec(request.param), T, prepare=random_correction_bias)


def test_transformers_builds_the_family_class(family):
    spec, hf, ours, _, _ = family
    assert type(hf).__name__ == "DeepseekV3ForCausalLM"
    assert [type(layer.mlp).__name__ for layer in hf.model.layers] == [
        "DeepseekV3MLP", "DeepseekV3MoE", "DeepseekV3MoE"]
    assert hf.config.norm_topk_prob == spec.ffn.routing.normalize
    bias = hf.model.layers[1].mlp.gate.e_score_correction_bias
    assert bias.abs().max() > 0.1  # the random bias is really there...
    assert torch.equal(ours.layers[1].mlp.gate.e_score_correction_bias, bias)  # ...and loaded


def _picks(model, ids):
    return [index for _, index in routed(model, ids)]


def _unbiased(ours):
    """A copy of `ours` whose selection ignores the correction bias (zeroed)."""
    other = copy.deepcopy(ours)
    for name, b in other.named_buffers():
        if name.endswith("e_score_correction_bias"):
            b.zero_()
    return other


def test_routing_varies_and_the_bias_changes_it(family):
    _, _, ours, ids, _ = family
    picks, plain = _picks(ours, ids), _picks(_unbiased(ours), ids)
    assert len(picks) == 2  # layers 1 and 2
    assert all(len({tuple(sorted(row.tolist())) for row in index}) > 3 for index in picks)
    changed = sum(int((a.sort().values != b.sort().values).any(-1).sum())
                  for a, b in zip(picks, plain))
    assert changed > 10  # the bias moves many tokens' choices


def test_ignoring_the_bias_in_selection_breaks_parity(family):
    """The same weights with the correction bias left out of the choice: far off, so the
    parity tests exercise the bias."""
    _, _, ours, ids, reference = family
    with torch.no_grad():
        assert max_diff(_unbiased(ours)(ids), reference) > 1e-3


def test_the_other_normalisation_breaks_parity(family):
    spec, hf, _, ids, reference = family
    other = load_same_weights(_spec(not spec.ffn.routing.normalize), hf, "deepseek_v3")
    with torch.no_grad():
        assert max_diff(other(ids), reference) > 1e-3


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    _, p, theirs = checked_preset("deepseek-v3", "DeepseekV3ForCausalLM")
    assert len(theirs.model.layers) == 61  # no MTP layer built (num_nextn_predict_layers 1)
    assert (p.total, p.active) == (671_026_404_352, 37_552_282_624)
    # the correction bias is a buffer on both sides: 58 MoE layers x 256, not a parameter
    buffers = [b for n, b in theirs.named_buffers() if n.endswith("e_score_correction_bias")]
    assert sum(b.numel() for b in buffers) == 58 * 256
    # the paper: "671B total parameters with 37B activated for each token"
    assert round(p.total / 1e9) == 671 and 37e9 <= p.active < 38e9


def test_kimi_k2_is_deepseek_v3_with_its_own_sizes():
    """Kimi K2 builds as transformers' DeepseekV3ForCausalLM (its config names that class):
    the counts agree exactly, and match the card's "1 trillion total / 32 billion activated"."""
    _, p, _ = checked_preset("kimi-k2", "DeepseekV3ForCausalLM")
    assert (p.total, p.active) == (1_026_408_209_408, 32_861_477_888)
    # the card's "1 trillion" and "32 billion" are the counts cut, not rounded (32.86B)
    assert round(p.total / 1e12) == 1 and 32e9 <= p.active < 33e9
