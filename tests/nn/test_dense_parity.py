"""Logit parity with transformers for each dense family (fp32, max abs diff < 1e-4)."""

import pytest
import torch

from archscope.spec.hf import spec_to_hf_config
from parity import decode_stepwise, load_same_weights, logits_case, max_diff, tiny_spec, twins

TOL = 1e-4
T = 12

FAMILIES = {
    "gpt2": dict(norm=dict(kind="layernorm", eps=1e-5), position=dict(kind="learned"),
                 attention=dict(kind="gqa", n_heads=4, n_kv_heads=4, head_dim=16, bias=True),
                 ffn=dict(kind="mlp", d_ff=256, activation="gelu_tanh", bias=True),
                 tie_embeddings=True),
    "llama-llama3-rope": dict(position=dict(kind="rope", theta=10000.0, scaling=dict(
        kind="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_seq_len=16))),
    "mistral-window": dict(attention=dict(window=4)),
    "granite-multipliers": dict(multipliers=dict(embedding=12.0, attention=0.015625,
                                                 residual=0.22, logits=8.0),
                                tie_embeddings=True),
    "llama-biases": dict(attention=dict(n_kv_heads=4, bias=True),
                         ffn=dict(kind="swiglu", d_ff=96, bias=True), tie_embeddings=True),
    "qwen2-qkv-bias": dict(attention=dict(bias=True, out_bias=False)),
}

# What each family's test must be sensitive to: turning it off must break parity, or the test
# would pass without exercising the feature. Spec features are removed from the spec; biases
# are zeroed in the loaded model (a spec without them could not load the same weights).
FEATURE_OFF = {
    "llama-llama3-rope": dict(position=dict(kind="rope", theta=10000.0)),
    "mistral-window": dict(attention=dict(window=None)),
    "granite-multipliers": dict(multipliers=None, tie_embeddings=True),
}
ZERO_BIASES = {"llama-biases", "qwen2-qkv-bias"}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request):
    spec = tiny_spec(**FAMILIES[request.param])
    hf, ours = twins(spec)
    return (request.param, *logits_case(spec, hf, ours, T))


def test_prefill_logits_match(family):
    _, _, _, ours, ids, reference = family
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL


def test_cached_decoding_matches(family):
    _, _, _, ours, ids, reference = family
    assert max_diff(decode_stepwise(ours, ids, prefill=5), reference) < TOL


def test_the_feature_under_test_matters(family):
    name, spec, hf, _, ids, reference = family
    if name in FEATURE_OFF:
        without = tiny_spec(**{**FAMILIES[name], **FEATURE_OFF[name]})
        ours = load_same_weights(without, hf, spec_to_hf_config(spec)["model_type"])
    elif name in ZERO_BIASES:
        ours = load_same_weights(spec, hf, spec_to_hf_config(spec)["model_type"])
        with torch.no_grad():
            for pname, p in ours.named_parameters():
                if pname.endswith("proj.bias"):
                    p.zero_()
    else:
        pytest.skip("baseline family")
    with torch.no_grad():
        assert max_diff(ours(ids), reference) > 1e-3
