"""SmolLM3 (Llama + NoPE layers: attention.rope false) against transformers' own class: logits
of a tiny config built both ways with the same weights (prefill and cached decoding, fp32), the
preset's parameters on the meta device, FLOPs under FlopCounterMode and cache bytes after a real
prefill; and the same weights with RoPE on every layer, far off, so the test exercises NoPE.
"""

import pytest
import torch

from archscope.estimate import count_params, kv_cache_bytes, prefill_flops
from archscope.nn import build_model
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.weights import hf_to_ours, table_for
from parity import (decode_stepwise, held_cache_bytes, hf_eager_prefill_flops, logits_case,
                    max_diff, meta_param_counts, tiny_spec, twins)

TOL = 1e-4
T, PREFILL = 20, 5  # 15 cached decode steps after the prefill

# 4 layers, NoPE on 1 and 3 (SmolLM3's pattern with interval 2); tied, as SmolLM3
NOPE = dict(n_layers=4, tie_embeddings=True, norm=dict(kind="rmsnorm", eps=1e-6),
            layers=[dict(select="1::2", attention=dict(rope=False))])


@pytest.fixture(scope="module")
def setup():
    spec = tiny_spec(**NOPE)
    hf, ours = twins(spec)
    return logits_case(spec, hf, ours, T)


def test_transformers_builds_smollm3_with_our_nope_layers(setup):
    spec, hf, _, _, _ = setup
    assert type(hf).__name__ == "SmolLM3ForCausalLM"
    assert hf.config.no_rope_layers == [1, 0, 1, 0]
    assert [layer.self_attn.use_rope for layer in hf.model.layers] == [1, 0, 1, 0]
    assert [layer.attention.rope for layer in spec.plan] == [True, False, True, False]


def test_prefill_logits_match(setup):
    _, _, ours, ids, reference = setup
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL


def test_cached_decoding_matches(setup):
    _, _, ours, ids, reference = setup
    assert max_diff(decode_stepwise(ours, ids, prefill=PREFILL), reference) < TOL


def test_rope_on_every_layer_breaks_parity(setup):
    """The same weights with RoPE on every layer: far off, so the NoPE layers are exercised."""
    spec, hf, _, ids, reference = setup
    model = build_model(tiny_spec(**{**NOPE, "layers": []}))
    shapes = {k: v.shape for k, v in model.state_dict().items()}
    mapped, unmatched = hf_to_ours(table_for("smollm3"), hf.state_dict(), shapes)
    assert not unmatched
    model.load_state_dict(mapped, strict=True)
    with torch.no_grad():
        assert max_diff(model(ids), reference) > 1e-3


def test_nope_modules_do_not_rotate(setup):
    _, _, ours, _, _ = setup
    assert [layer.self_attn.rotary for layer in ours.layers] == [True, False, True, False]


def test_prefill_flops_match_transformers_exactly(setup):
    spec = setup[0]
    assert prefill_flops(spec, 10, batch=2, attention="full").total == \
        hf_eager_prefill_flops(spec)


def test_cache_after_a_real_prefill_holds_the_estimate(setup):
    spec, _, ours, ids, _ = setup
    assert held_cache_bytes(ours, ids, 2 * T) == kv_cache_bytes(spec, T, ids.shape[0], "fp32")


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    spec = load_spec("smollm3-3b")
    config = spec_to_hf_config(spec)
    assert config["architectures"] == ["SmolLM3ForCausalLM"]
    counted, theirs_count, theirs = meta_param_counts(spec)
    assert theirs.config.no_rope_layers == [int((i + 1) % 4 != 0) for i in range(36)]
    assert counted == theirs_count == count_params(spec).total
    assert counted == 3_075_098_624
