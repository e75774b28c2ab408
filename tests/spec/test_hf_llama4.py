"""HF config.json interop for Llama 4: the published Scout text_config (alone as llama4_text, or
inside the multimodal llama4 file) imports to the preset; transformers' default rules
(layer_types, no_rope_layer_interval, interleave_moe_layer_step) give the same layers as
Llama4TextConfig; the preset exports to Llama4ForCausalLM; bad keys and inconsistent specs
are refused, naming the key.
"""

import warnings

import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.spec.resolved import differences
from hf_configs import write_config
from parity import tiny_spec

TEXT = {"model_type": "llama4_text", "vocab_size": 202048, "hidden_size": 5120,
        "intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_hidden_layers": 48,
        "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
        "max_position_embeddings": 262144, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
        "attention_bias": False, "attention_dropout": 0.0, "hidden_act": "silu",
        "attention_chunk_size": 8192, "no_rope_layers": [1, 1, 1, 0] * 12, "use_qk_norm": True,
        "attn_temperature_tuning": 4, "floor_scale": 8192, "attn_scale": 0.1,
        "interleave_moe_layer_step": 1, "moe_layers": list(range(48)), "num_local_experts": 16,
        "num_experts_per_tok": 1, "router_jitter_noise": 0.0, "bos_token_id": 200000,
        "eos_token_id": [200001, 200007, 200008], "pad_token_id": 200018,
        "tie_word_embeddings": False}
WRAPPED = {"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
           "tie_word_embeddings": False, "boi_token_index": 200080, "image_token_index": 200092,
           "text_config": TEXT, "vision_config": {"model_type": "llama4_vision_model"}}


@pytest.mark.parametrize("config", [TEXT, WRAPPED], ids=["llama4_text", "llama4"])
def test_published_config_gives_the_preset(tmp_path, config):
    spec = load_spec(write_config(tmp_path / "scout", config))
    assert list(differences(spec, load_spec("llama-4-scout"))) == []
    nope = [layer.index for layer in spec.plan if not layer.attention.rope]
    assert nope == list(range(3, 48, 4))
    assert {layer.layer_type for layer in spec.plan if layer.index in nope} == {"full_attention"}


def test_wrapper_names_what_its_text_config_lacks(tmp_path):
    text = {k: v for k, v in TEXT.items() if k != "floor_scale"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_spec(write_config(tmp_path / "scout", {**WRAPPED, "text_config": text}))
    assert any("no text_config.floor_scale" in str(w.message) for w in caught)


def test_transformers_default_rules(tmp_path):
    """No layer_types, no no_rope_layers, no moe_layers: Llama4TextConfig's own rules."""
    config = {k: v for k, v in TEXT.items()
              if k not in ("layer_types", "no_rope_layers", "moe_layers")}
    config.update(num_hidden_layers=8, no_rope_layer_interval=3, interleave_moe_layer_step=2)
    spec = load_spec(write_config(tmp_path / "l4", config))
    theirs = AutoConfig.for_model(**{**config, "attn_temperature_tuning": True})
    assert [int(layer.attention.rope) for layer in spec.plan] == theirs.no_rope_layers
    assert [layer.layer_type for layer in spec.plan] == theirs.layer_types
    assert [layer.index for layer in spec.plan if layer.is_moe] == theirs.moe_layers == [1, 3, 5, 7]
    dense = next(layer.ffn for layer in spec.plan if not layer.is_moe)
    assert (dense.kind, dense.d_ff) == ("swiglu", 16384)


def test_the_preset_exports_to_llama4_text():
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec("llama-4-scout")
    config = spec_to_hf_config(spec)
    assert config["architectures"] == ["Llama4ForCausalLM"]
    assert config["layer_types"][:4] == ["chunked_attention"] * 3 + ["full_attention"]


def test_layer_types_beside_no_rope_layers_are_honoured(tmp_path):
    """An explicit layer_types decides the mask, whatever the RoPE switch says."""
    types = ["full_attention", "chunked_attention"] * 24
    spec = load_spec(write_config(tmp_path / "l4", {**TEXT, "layer_types": types}))
    assert [layer.layer_type for layer in spec.plan] == types
    assert spec_to_hf_config(spec)["layer_types"] == types


@pytest.mark.parametrize("change, key", [
    ({"attention_chunk_size": 0}, "attention_chunk_size"),
    ({"attention_chunk_size": None}, "attention_chunk_size"),
    ({"layer_types": ["sliding_attention"] * 48}, "layer_types[0]"),
    ({"layer_types": ["full_attention"] * 3}, "layer_types"),
    ({"num_experts_per_tok": 17}, "num_experts_per_tok"),
    ({"attn_temperature_tuning": "yes"}, "attn_temperature_tuning"),
    ({"no_rope_layers": [1, 2] * 24}, "no_rope_layers[1]"),
    ({"moe_layers": [48]}, "moe_layers[0]"),
    ({"floor_scale": 0}, "floor_scale"),
])
def test_bad_keys_are_named(tmp_path, change, key):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "l4", {**TEXT, **change}))
    assert err.value.key == key
    with pytest.raises(SpecError) as err:  # inside the wrapper: named as nested there
        load_spec(write_config(tmp_path / "w", {**WRAPPED, "text_config": {**TEXT, **change}}))
    assert err.value.key == f"text_config.{key}"


BASE = dict(position=dict(kind="rope", theta=10000.0, interleaved=True),
            attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16, chunk=4))


@pytest.mark.parametrize("attention, key", [
    (dict(window=8), "attention.chunk"),
    (dict(rope=False, qk_norm="l2"), "attention.qk_norm"),
    (dict(temperature_offset=0), "attention.temperature_offset"),
    (dict(temperature_floor=8, temperature_scale=0.1, temperature_offset=-1),
     "attention.temperature_offset"),
    (dict(rope=False, temperature_floor=8), "attention.temperature_scale"),
    (dict(chunk=0), "attention.chunk"),
])
def test_inconsistent_attention_is_refused(attention, key):
    with pytest.raises(SpecError) as err:
        tiny_spec(**{**BASE, "attention": {**BASE["attention"], **attention}})
    assert err.value.key == key


def test_other_refusals():
    with pytest.raises(SpecError) as err:  # adjacent pairs mean nothing without RoPE
        tiny_spec(position=dict(kind="learned", interleaved=True))
    assert err.value.key == "position.interleaved"
    with pytest.raises(SpecError) as err:  # Llama 4's class always rotates adjacent pairs
        spec_to_hf_config(tiny_spec(**{**BASE, "position": dict(kind="rope", theta=1e4)}))
    assert err.value.key == "position.interleaved"
    with pytest.raises(SpecError) as err:
        tiny_spec(ffn=dict(kind="moe", n_experts=4, top_k=1, d_expert=8,
                           router=dict(weights="inputs")))
    assert err.value.key == "ffn.router.weights"
