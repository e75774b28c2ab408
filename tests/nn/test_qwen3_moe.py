"""Qwen3-MoE (Qwen3 + a softmax top-k MoE with no shared experts, on the layers
decoder_sparse_step and mlp_only_layers pick) against transformers' Qwen3MoeForCausalLM, beyond
the conformance cases' parity (with and without norm_topk_prob): a tiny config's dense middle
layer, routing that varies, the other normalisation far off, and the full-size preset's
parameters on the meta device (total and active) against the card.
"""

import pytest
import torch

from archscope.spec.hf import spec_to_hf_config
from parity import checked_preset, load_same_weights, max_diff, routed, tiny_spec, twin_case

T = 20


def _spec(normalize: bool):
    """3 layers, the middle one dense (mlp_only_layers [1]); head_dim 24 x 4 heads != d_model."""
    return tiny_spec(
        n_layers=3, norm=dict(kind="rmsnorm", eps=1e-6),
        attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=24, qk_norm="head"),
        ffn=dict(kind="moe", n_experts=8, top_k=3, d_expert=32,
                 router=dict(method="greedy", normalize=normalize)),
        layers=[dict(select="1:2", ffn=dict(kind="swiglu", d_ff=96))])


@pytest.fixture(scope="module", params=[True, False], ids=["normalize", "plain"])
def family(request):
    return twin_case(_spec(request.param), T)


def test_transformers_builds_the_family_class_with_its_dense_layer(family):
    spec, hf, _, _, _ = family
    assert type(hf).__name__ == "Qwen3MoeForCausalLM"
    assert hf.config.mlp_only_layers == [1]
    assert [type(layer.mlp).__name__ for layer in hf.model.layers] == [
        "Qwen3MoeSparseMoeBlock", "Qwen3MoeMLP", "Qwen3MoeSparseMoeBlock"]
    assert hf.config.norm_topk_prob == spec.ffn.routing.normalize


def test_routing_is_not_vacuous(family):
    _, _, ours, ids, _ = family
    picks = [index for _, index in routed(ours, ids)]
    assert len(picks) == 2  # layers 0 and 2
    assert all(len({tuple(sorted(row.tolist())) for row in index}) > 3 for index in picks)


def test_the_other_normalisation_breaks_parity(family):
    """The same weights with norm_topk_prob flipped: far off, so the test exercises it."""
    spec, hf, _, ids, reference = family
    model = load_same_weights(_spec(not spec.ffn.routing.normalize), hf, "qwen3_moe")
    with torch.no_grad():
        assert max_diff(model(ids), reference) > 1e-2


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    spec, p, _ = checked_preset("qwen3-30b-a3b", "Qwen3MoeForCausalLM")
    assert spec_to_hf_config(spec)["architectures"] == ["Qwen3MoeForCausalLM"]
    assert (p.total, p.active) == (30_532_122_624, 3_353_032_704)
    # the card: "30.5B in total and 3.3B activated" (3.35B, cut rather than rounded)
    assert round(p.total / 1e9, 1) == 30.5 and 3.3e9 <= p.active < 3.4e9
