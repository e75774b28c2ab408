"""The Gemma 2 presets: the published config.json imports to them, their parameters on meta are
transformers' Gemma2ForCausalLM's (and the published totals), they round-trip through
transformers' config class, and the cache a real prefill leaves in a tiny-layer variant (their
heads, head_dim and layer pattern; a narrower width, two layers, a window the prompt crosses) is
the estimate."""

import pytest
import torch

from archscope.estimate import count_params, kv_cache_bytes
from archscope.nn import build_model
from archscope.spec import load_spec, with_overrides
from archscope.spec.resolved import differences
from hf_configs import network, through_transformers, write_config
from parity import active_params_from_modules, held_cache_bytes, meta_param_counts

# google/gemma-2-9b and google/gemma-2-27b config.json as published (sources in the presets'
# headers); the files have no tie_word_embeddings and no layer_types
_COMMON = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2",
           "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": 50.0,
           "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1,
           "final_logit_softcapping": 30.0, "hidden_act": "gelu_pytorch_tanh",
           "hidden_activation": "gelu_pytorch_tanh", "initializer_range": 0.02,
           "max_position_embeddings": 8192, "pad_token_id": 0, "rms_norm_eps": 1e-06,
           "rope_theta": 10000.0, "sliding_window": 4096, "sliding_window_size": 4096,
           "torch_dtype": "bfloat16", "transformers_version": "4.42.0.dev0", "use_cache": True,
           "vocab_size": 256000}
PUBLISHED = {
    "gemma-2-9b": {**_COMMON, "head_dim": 256, "hidden_size": 3584, "intermediate_size": 14336,
                   "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8,
                   "query_pre_attn_scalar": 256},
    "gemma-2-27b": {**_COMMON, "head_dim": 128, "hidden_size": 4608,
                    "intermediate_size": 36864, "num_attention_heads": 32,
                    "num_hidden_layers": 46, "num_key_value_heads": 16,
                    "query_pre_attn_scalar": 144},
}
# the totals the model cards state (9.24B, 27.2B), to the parameter
TOTALS = {"gemma-2-9b": 9_241_705_984, "gemma-2-27b": 27_227_128_320}


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_config_gives_the_preset(name, tmp_path):
    spec = load_spec(write_config(tmp_path / name, PUBLISHED[name]))
    assert list(differences(spec, load_spec(name))) == []  # the same network, spelled apart


@pytest.mark.parametrize("name", PUBLISHED)
def test_preset_params_on_meta_equal_transformers(name):
    spec = load_spec(name)
    ours, theirs, model = meta_param_counts(spec)
    assert type(model).__name__ == "Gemma2ForCausalLM"
    assert ours == theirs == count_params(spec).total == TOTALS[name]
    assert count_params(spec).active == active_params_from_modules(
        build_model(spec, device="meta")) == TOTALS[name]  # dense: every parameter is active


@pytest.mark.parametrize("name", PUBLISHED)
def test_preset_round_trips_through_transformers(name, tmp_path):
    assert network(through_transformers(load_spec(name), tmp_path)) == network(load_spec(name))


@pytest.mark.parametrize("name", PUBLISHED)
def test_the_cache_of_a_tiny_layer_variant_holds_the_estimate(name):
    """Two layers (one sliding, one global, as the preset's first two), the preset's heads and
    head_dim, width 64, a window of 6 under an 18-token prompt: the cache after a real prefill
    holds 6 tokens in the sliding layer and 18 in the global one, as estimated."""
    spec = with_overrides(load_spec(name), ["n_layers=2", "vocab_size=64", "d_model=64",
                                            "ffn.d_ff=32", "attention.window=6",
                                            "multipliers.embedding=8.0"])
    assert [layer.window for layer in spec.plan] == [6, None]
    ids = torch.randint(0, 64, (2, 18), generator=torch.Generator().manual_seed(0))
    held = held_cache_bytes(build_model(spec, dtype=torch.float32), ids, 32)
    a = spec.attention
    assert held == kv_cache_bytes(spec, 18, 2, "fp32") == 2 * 2 * a.n_kv_heads * a.head_dim * \
        4 * (6 + 18)
