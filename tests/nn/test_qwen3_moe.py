"""Qwen3-MoE (Qwen3 + a softmax top-k MoE with no shared experts, on the layers
decoder_sparse_step and mlp_only_layers pick) against transformers' Qwen3MoeForCausalLM: logits
of a tiny config built both ways with the same weights (prefill and cached decoding, fp32, with
and without norm_topk_prob), parameters of the full-size preset on the meta device (total and
active), FLOPs under FlopCounterMode and cache bytes after a real prefill.
"""

import pytest
import torch
import transformers

from archscope.estimate import count_params, kv_cache_bytes, prefill_flops
from archscope.nn import build_model
from archscope.nn.moe import Router
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.weights import hf_to_ours, table_for
from parity import (active_params_from_modules, decode_stepwise, held_cache_bytes,
                    hf_eager_prefill_flops, logits_case, max_diff, tiny_spec, twins)

TOL = 1e-4
T, PREFILL = 20, 5  # 15 cached decode steps after the prefill


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
    spec = _spec(request.param)
    hf, ours = twins(spec)
    return logits_case(spec, hf, ours, T)


def test_transformers_builds_the_family_class_with_its_dense_layer(family):
    spec, hf, _, _, _ = family
    assert type(hf).__name__ == "Qwen3MoeForCausalLM"
    assert hf.config.mlp_only_layers == [1]
    assert [type(layer.mlp).__name__ for layer in hf.model.layers] == [
        "Qwen3MoeSparseMoeBlock", "Qwen3MoeMLP", "Qwen3MoeSparseMoeBlock"]
    assert hf.config.norm_topk_prob == spec.ffn.routing.normalize


def test_prefill_logits_match(family):
    _, _, ours, ids, reference = family
    assert reference.abs().max() > 1.0  # not vacuous
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL


def test_cached_decoding_matches(family):
    _, _, ours, ids, reference = family
    assert max_diff(decode_stepwise(ours, ids, prefill=PREFILL), reference) < TOL


def test_routing_is_not_vacuous(family):
    spec, _, ours, ids, _ = family
    picks = []
    hooks = [m.register_forward_hook(lambda m, a, out: picks.append(out[1]))
             for m in ours.modules() if isinstance(m, Router)]
    with torch.no_grad():
        ours(ids)
    for h in hooks:
        h.remove()
    assert len(picks) == 2  # layers 0 and 2
    assert all(len({tuple(sorted(row.tolist())) for row in index}) > 3 for index in picks)


def test_the_other_normalisation_breaks_parity(family):
    """The same weights with norm_topk_prob flipped: far off, so the test exercises it."""
    spec, hf, _, ids, reference = family
    other = _spec(not spec.ffn.routing.normalize)
    model = build_model(other)
    shapes = {k: v.shape for k, v in model.state_dict().items()}
    mapped, unmatched = hf_to_ours(table_for("qwen3_moe"), hf.state_dict(), shapes)
    assert not unmatched
    model.load_state_dict(mapped, strict=True)
    with torch.no_grad():
        assert max_diff(model(ids), reference) > 1e-2


def test_prefill_flops_match_transformers_exactly(family):
    """transformers' eager experts loop (one F.linear per expert hit) is countable, and so is
    archscope's reference loop; the estimate counts the top_k experts of every token."""
    spec, _, ours, _, _ = family
    assert prefill_flops(spec, 10, batch=2, attention="full").total == \
        hf_eager_prefill_flops(spec, experts_implementation="eager")


def test_cache_after_a_real_prefill_holds_the_estimate(family):
    spec, _, ours, ids, _ = family
    assert held_cache_bytes(ours, ids, 2 * T) == kv_cache_bytes(spec, T, ids.shape[0], "fp32")


def test_tiny_active_params_equal_the_built_modules(family):
    spec, _, ours, _, _ = family
    assert count_params(spec).active == active_params_from_modules(ours)


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    spec = load_spec("qwen3-30b-a3b")
    config = spec_to_hf_config(spec)
    assert config["architectures"] == ["Qwen3MoeForCausalLM"]
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**config))
    ours = build_model(spec, device="meta")
    p = count_params(spec)
    counted = sum(x.numel() for x in ours.parameters())
    assert counted == sum(x.numel() for x in theirs.parameters()) == p.total == 30_532_122_624
    assert p.active == active_params_from_modules(ours) == 3_353_032_704
    # the card: "30.5B in total and 3.3B activated" (3.35B, cut rather than rounded)
    assert round(p.total / 1e9, 1) == 30.5 and 3.3e9 <= p.active < 3.4e9
