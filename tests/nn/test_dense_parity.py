"""Negative controls for the dense families' parity (the parity itself, prefill and cached
decoding, is tests/conformance/test_families.py's, on a case per family): the same weights with
a family's feature turned off give logits far from transformers', so that parity exercises it.
"""

import pytest
import torch

from archscope.spec.hf import spec_to_hf_config
from parity import load_same_weights, max_diff, tiny_spec, twin_case

T = 12

FAMILIES = {
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

# Spec features are removed from the spec; the other families' biases are zeroed in the loaded
# model (a spec without them could not load the same weights).
FEATURE_OFF = {
    "llama-llama3-rope": dict(position=dict(kind="rope", theta=10000.0)),
    "mistral-window": dict(attention=dict(window=None)),
    "granite-multipliers": dict(multipliers=None, tie_embeddings=True),
}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request):
    return (request.param, *twin_case(tiny_spec(**FAMILIES[request.param]), T))


def test_the_feature_under_test_matters(family):
    name, spec, hf, _, ids, reference = family
    if name in FEATURE_OFF:
        without = tiny_spec(**{**FAMILIES[name], **FEATURE_OFF[name]})
        ours = load_same_weights(without, hf, spec_to_hf_config(spec)["model_type"])
    else:
        ours = load_same_weights(spec, hf, spec_to_hf_config(spec)["model_type"])
        with torch.no_grad():
            for pname, p in ours.named_parameters():
                if pname.endswith("proj.bias"):
                    p.zero_()
    with torch.no_grad():
        assert max_diff(ours(ids), reference) > 1e-3
