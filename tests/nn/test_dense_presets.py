"""The dense long-tail presets against the config.json values their headers cite: the values
read as the preset, transformers' class built from them on the meta device counts what the
preset counts, and a tiny-layer variant of them (same kinds and windows, toy sizes) holds in
archscope's cache what the estimate says after a real prefill."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import transformers

from archscope.estimate import count_params, kv_cache_bytes
from archscope.nn import build_model
from archscope.spec import load_spec
from archscope.spec.resolved import differences
from parity import held_cache_bytes

_OLMO3_YARN = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 8192,
               "beta_fast": 32.0, "beta_slow": 1.0, "attention_factor": 1.2079441541679836}
_OLMO3 = {"model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"], "hidden_act": "silu",
          "attention_bias": False, "rms_norm_eps": 1e-6, "vocab_size": 100278,
          "max_position_embeddings": 65536, "sliding_window": 4096, "rope_theta": 500000.0,
          "rope_scaling": _OLMO3_YARN, "tie_word_embeddings": False}


def _olmo3_types(n: int) -> list[str]:
    return (["sliding_attention"] * 3 + ["full_attention"]) * (n // 4)


# The config.json keys each preset's header cites (values as published; see model_specs/)
PUBLISHED = {
    "olmo-3-7b": dict(_OLMO3, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                      num_attention_heads=32, num_key_value_heads=32,
                      layer_types=_olmo3_types(32)),
    "olmo-3-32b": dict(_OLMO3, hidden_size=5120, intermediate_size=27648, num_hidden_layers=64,
                       num_attention_heads=40, num_key_value_heads=8,
                       layer_types=_olmo3_types(64)),
    "exaone-4.0-32b": {
        "model_type": "exaone4", "architectures": ["Exaone4ForCausalLM"], "hidden_act": "silu",
        "hidden_size": 5120, "intermediate_size": 27392, "num_hidden_layers": 64,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 1000000,
        "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        "sliding_window": 4096, "sliding_window_pattern": 4, "tie_word_embeddings": False,
        "vocab_size": 102400},
    "seed-oss-36b": {
        "model_type": "seed_oss", "architectures": ["SeedOssForCausalLM"], "hidden_act": "silu",
        "hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
        "num_attention_heads": 80, "num_key_value_heads": 8, "head_dim": 128,
        "rms_norm_eps": 1e-6, "vocab_size": 155136, "rope_theta": 10000000.0,
        "rope_scaling": {"rope_type": "default"}, "max_position_embeddings": 524288,
        "attention_bias": True, "attention_out_bias": False, "mlp_bias": False,
        "tie_word_embeddings": False},
    "mistral-small-3.1": {
        "model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"],
        "text_config": {"model_type": "mistral", "head_dim": 128, "hidden_act": "silu",
                        "hidden_size": 5120, "intermediate_size": 32768,
                        "max_position_embeddings": 131072, "num_attention_heads": 32,
                        "num_hidden_layers": 40, "num_key_value_heads": 8,
                        "rms_norm_eps": 1e-5, "rope_theta": 1000000000.0,
                        "sliding_window": None, "vocab_size": 131072}},
}
# transformers' count on meta (the tests compute it; these pin it for the report)
TOTALS = {"olmo-3-7b": 7_298_011_136, "olmo-3-32b": 32_233_522_176,
          "exaone-4.0-32b": 32_003_216_384, "seed-oss-36b": 36_151_104_512,
          "mistral-small-3.1": 23_572_403_200}


def _read(tmp_path, config: dict):
    (tmp_path / "config.json").write_text(json.dumps(config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keys the files leave out take the class defaults
        return load_spec(tmp_path)


def _text(config: dict) -> dict:
    """The text model's keys (a wrapper's text_config), for its class on its own."""
    return config.get("text_config", config)


@pytest.mark.parametrize("name", PUBLISHED)
def test_the_published_values_read_as_the_preset(name, tmp_path):
    assert list(differences(load_spec(name), _read(tmp_path, PUBLISHED[name]))) == []


@pytest.mark.parametrize("name", PUBLISHED)
def test_params_equal_transformers_built_from_the_published_values(name):
    spec = load_spec(name)
    config = transformers.AutoConfig.for_model(**_text(PUBLISHED[name]))
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(config)
    ours = build_model(spec, device="meta")
    assert count_params(spec).total == sum(p.numel() for p in ours.parameters()) == \
        sum(p.numel() for p in theirs.parameters()) == TOTALS[name]


def _tiny_layers(config: dict) -> dict:
    """The published values with 4 layers (each layer type kept), toy widths (the query heads
    per KV head kept) and a 6-token window, so a 10-token prefill crosses it."""
    text = _text(config)
    group = text["num_attention_heads"] // text["num_key_value_heads"]
    tiny = dict(text, num_hidden_layers=4, hidden_size=64, intermediate_size=96,
                num_attention_heads=2 * group, num_key_value_heads=2, head_dim=16,
                vocab_size=97)
    if text.get("sliding_window"):
        tiny["sliding_window"] = 6
    if "layer_types" in text:
        tiny["layer_types"] = text["layer_types"][:4]
    return {**config, "text_config": tiny} if "text_config" in config else tiny


@pytest.mark.parametrize("name", PUBLISHED)
def test_the_cache_holds_the_estimate_on_a_tiny_layer_variant(name, tmp_path):
    spec = _read(tmp_path, _tiny_layers(PUBLISHED[name]))
    assert [layer.layer_type for layer in spec.plan] == \
        [layer.layer_type for layer in load_spec(name).plan[:4]]
    model = build_model(spec).eval()
    ids = torch.randint(0, spec.vocab_size, (2, 10), generator=torch.Generator().manual_seed(0))
    assert held_cache_bytes(model, ids, 24) == kv_cache_bytes(spec, 10, 2, "fp32")
