"""Bamba (Llama + Granite 4.0-H's Mamba-2 layers, attention on the layers attn_layer_indices
lists, RoPE on half of each head) against transformers' BambaForCausalLM, where it differs from
the conformance case (tests/conformance/family_cases.py): dt clamped at 0.5, which transformers'
full pass applies and its cached steps do not (a 9-token prompt in chunks of 4, then 13 cached
decode steps against its own cached ones, and the bytes its cache holds); a negative control
(whole-head RoPE); the clamp and projection biases through config.json; and the config.json
keys refused. No Bamba preset is shipped.
"""

import pytest
import torch
from transformers import DynamicCache

from archscope.errors import SpecError
from archscope.estimate import kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.measure.reference import cache_kwargs
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config, write_hf_config
from archscope.spec.resolved import differences
from hf_configs import through_transformers, write_config
from parity import (decode_stepwise, load_same_weights, max_diff, meta_param_counts, tiny_spec,
                    twin_case)

TOL = 1e-4
T, PREFILL, BATCH = 22, 9, 2
ATTENDS = [1, 4]


def bamba(**changes):
    base = dict(n_layers=5, d_model=32, position=dict(kind="rope", theta=10000.0),
                attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=8,
                               rotary_fraction=0.5),
                mixer=dict(kind="mamba2", n_heads=8, head_dim=8, d_state=8, n_groups=2,
                           conv_kernel=4, chunk_size=4, proj_bias=True, dt_limit_max=0.5),
                ffn=dict(kind="swiglu", d_ff=48),
                layers=[dict(select=ATTENDS, mixer="attention")])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(bamba(), T)


def test_logits_match_in_prefill_and_cached_decoding(setup):
    spec, hf, ours, ids, reference = setup
    assert type(hf).__name__ == "BambaForCausalLM"
    assert hf.config.layers_block_type.count("full_attention") == len(ATTENDS)
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL
    # decoding from a 9-token prompt: transformers' full pass clamps dt in every step, its
    # cached steps (and ours) do not; so the cached logits are compared with its cached ones.
    # Positions are passed: unasked, BambaModel counts the tokens seen by layer 0's cache, a
    # Mamba layer's, which holds none, and would rotate every step as position 0.
    cache = DynamicCache(config=hf.config)
    with torch.no_grad():
        theirs = [hf(ids[:, :PREFILL], use_cache=True, **cache_kwargs(hf, cache)).logits]
        theirs += [hf(ids[:, t:t + 1], use_cache=True, **cache_kwargs(hf, cache),
                      position_ids=torch.tensor([[t]])).logits for t in range(PREFILL, T)]
    assert max_diff(decode_stepwise(ours, ids, prefill=PREFILL), torch.cat(theirs, 1)) < TOL
    kv = sum(layer.keys.nbytes + layer.values.nbytes for layer in cache.layers
             if hasattr(layer, "keys") and torch.is_tensor(getattr(layer, "keys", None)))
    assert kv == kv_cache_bytes(spec, T, BATCH, "fp32")
    assert state_bytes(spec, BATCH, "fp32") == BATCH * 3 * 4 * ((64 + 32) * 4 + 8 * 8 * 8)


def test_whole_head_rope_breaks_parity(setup):
    spec, hf, _, ids, reference = setup
    whole = load_same_weights(spec.replace(attention={**vars(spec.attention),
                                                      "rotary_fraction": None}), hf, "bamba")
    with torch.no_grad():
        assert max_diff(whole(ids), reference) > 100 * TOL


def test_config_round_trip_and_params(tmp_path):
    """The clamp (time_step_limit) and the projection biases, which the conformance case leaves
    at transformers' defaults, written and read back; their parameters counted alike."""
    spec = bamba(n_layers=5, vocab_size=300)
    config = spec_to_hf_config(spec)
    assert config["model_type"] == "bamba" and config["attn_layer_indices"] == ATTENDS
    write_hf_config(spec, tmp_path / "ours")
    assert load_spec(tmp_path / "ours") == spec
    assert list(differences(through_transformers(spec, tmp_path), spec)) == []
    ours, theirs, _ = meta_param_counts(spec)
    assert ours == theirs


@pytest.mark.parametrize("change, key", [
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                          "partial_rotary_factor": 1.0}}, "rope_parameters.partial_rotary_factor"),
    ({"attn_layer_indices": [7]}, "attn_layer_indices[0]"),
    ({"hidden_act": "gelu"}, "hidden_act"),
    ({"mamba_d_head": 9}, "mamba_d_head"),
])
def test_bad_keys_are_named(tmp_path, change, key):
    raw = spec_to_hf_config(bamba())
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "b", {**raw, **change}))
    assert err.value.key == key
