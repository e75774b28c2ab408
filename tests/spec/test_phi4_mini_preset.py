"""The phi-4-mini preset (microsoft/Phi-4-mini-instruct: LongRoPE over 3/4 of each head): the
published config.json (the values the preset's header cites) reads as the preset; its
parameters equal transformers' Phi3ForCausalLM built on the meta device from that config; its
rotation is transformers' own on both sides of the 4,096-token original context; and the
estimated KV cache equals what archscope's cache holds after a real prefill of a variant with 2
layers (its attention as published, the width and vocabulary shrunk), which scales to the
preset's 32 layers."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
import transformers

from archscope.estimate import count_params
from archscope.nn import build_model
from archscope.nn.rope import RotaryEmbedding
from archscope.spec import load_spec, with_overrides
from hf_configs import network, write_config
from parity import shrunk_cache_bytes

_LONG = [1, 1.118320672, 1.250641126, 1.398617824, 1.564103225, 1.74916897, 1.956131817,
         2.187582649, 2.446418898, 2.735880826, 3.059592084, 3.421605075, 3.826451687,
         4.279200023, 4.785517845, 5.351743533, 5.984965424, 6.693110555, 7.485043894,
         8.370679318, 9.36110372, 10.4687158, 11.70738129, 13.09260651, 14.64173252,
         16.37415215, 18.31155283, 20.47818807, 22.90118105, 25.61086418, 28.64115884, 32.03,
         32.1, 32.13, 32.23, 32.6, 32.61, 32.64, 32.66, 32.7, 32.71, 32.93, 32.97, 33.28,
         33.49, 33.5, 44.16, 47.77]
# microsoft/Phi-4-mini-instruct config.json as published (its sources are in
# model_specs/phi-4-mini.yaml), every key but auto_map (remote code transformers does not run)
PUBLISHED = {
    "_name_or_path": "Phi-4-mini-instruct", "architectures": ["Phi3ForCausalLM"],
    "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 199999,
    "embd_pdrop": 0.0, "eos_token_id": 199999, "full_attn_mod": 1, "hidden_act": "silu",
    "hidden_size": 3072, "initializer_range": 0.02, "intermediate_size": 8192,
    "interpolate_factor": 1, "lm_head_bias": False, "max_position_embeddings": 131072,
    "mlp_bias": False, "model_type": "phi3", "num_attention_heads": 24, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "original_max_position_embeddings": 4096, "pad_token_id": 199999,
    "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05,
    "rope_scaling": {"long_factor": _LONG, "short_factor": [1.0] * 48, "type": "longrope"},
    "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": True,
    "torch_dtype": "bfloat16", "transformers_version": "4.45.0", "use_cache": True,
    "vocab_size": 200064}
# the variant whose cache is measured: 2 layers, the attention as published, narrow elsewhere
SHRUNK = ["n_layers=2", "vocab_size=256", "d_model=64", "ffn.d_ff=32"]
BATCH, TOKENS = 2, 9


def _config():  # transformers' config takes its rope dict in place: a copy each time
    return transformers.AutoConfig.for_model(**copy.deepcopy(PUBLISHED))


def test_the_published_config_reads_as_the_preset(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the keys the file leaves to the class
        spec = load_spec(write_config(tmp_path / "d", PUBLISHED))
    assert network(spec) == network(load_spec("phi-4-mini"))


@pytest.mark.slow
def test_parameters_equal_transformers_on_meta():
    spec = load_spec("phi-4-mini")
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(_config())
    assert type(theirs).__name__ == "Phi3ForCausalLM"
    ours = sum(p.numel() for p in build_model(spec, device="meta").parameters())
    assert count_params(spec).total == ours == sum(p.numel() for p in theirs.parameters())
    assert count_params(spec).total == 3_836_021_760  # "3.8B" on the card


@pytest.mark.parametrize("length", [4096, 4097])  # short factors, then the long ones
def test_the_rotation_is_transformers_own_on_both_sides_of_the_original_context(length):
    """cos and sin of positions 0 .. length-1 in one call: transformers' Phi3RotaryEmbedding
    for the published config, archscope's for the preset (96 rotated dims, attention factor
    sqrt(1 + ln 32 / ln 4096))."""
    from transformers.models.phi3.modeling_phi3 import Phi3RotaryEmbedding

    spec = load_spec("phi-4-mini")
    positions = torch.arange(length)
    theirs = Phi3RotaryEmbedding(_config())
    cos, sin = theirs(torch.zeros(1, dtype=torch.float32), positions[None])
    ours = RotaryEmbedding(spec.attention.rotary_dim, spec.position.theta, spec.position.scaling)
    our_cos, our_sin = ours(positions, torch.float32)
    assert cos.shape[-1] == our_cos.shape[-1] == 96
    assert torch.allclose(our_cos, cos[0], atol=1e-6) and torch.allclose(our_sin, sin[0],
                                                                         atol=1e-6)


def test_the_cache_of_a_two_layer_variant_holds_the_estimate():
    preset = load_spec("phi-4-mini")
    spec = with_overrides(preset, SHRUNK)
    shrunk_cache_bytes(preset, spec, batch=BATCH, tokens=TOKENS)
