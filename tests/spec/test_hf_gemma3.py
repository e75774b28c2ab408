"""HF config.json interop for Gemma 3: the published gemma-3-1b config.json and gemma-3-27b's
multimodal config.json (a sparse text_config) import to the presets, both RoPE spellings (older
rope_theta/rope_local_base_freq/rope_scaling and transformers 5's rope_parameters per layer
type) read alike, the presets export as gemma3_text and read back (through transformers: the
round trip of every preset in test_hf.py), and what Gemma 3 or archscope cannot hold is refused
naming the key.
"""

import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec, with_overrides
from archscope.spec.hf import spec_to_hf_config, write_hf_config
from archscope.spec.hf_import import read_hf_config
from archscope.spec.resolved import differences
from hf_configs import write_config
from parity import tiny_spec

# config.json as published (sources in the presets' headers and /tmp/notes/configs_2025.md)
PUBLISHED_1B = {
    "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": 262144,
    "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 26,
    "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 256,
    "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000,
    "rope_local_base_freq": 10000, "rope_scaling": None, "query_pre_attn_scalar": 256,
    "sliding_window": 512, "sliding_window_pattern": 6, "final_logit_softcapping": None,
    "attn_logit_softcapping": None, "hidden_activation": "gelu_pytorch_tanh",
    "attention_bias": False, "attention_dropout": 0.0, "cache_implementation": "hybrid",
    "bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0, "torch_dtype": "bfloat16"}
TEXT_27B = {"head_dim": 128, "hidden_size": 5376, "intermediate_size": 21504,
            "model_type": "gemma3_text", "num_attention_heads": 32, "num_hidden_layers": 62,
            "num_key_value_heads": 16, "query_pre_attn_scalar": 168,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "sliding_window": 1024}
PUBLISHED_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
    "boi_token_index": 255999, "eoi_token_index": 256000, "image_token_index": 262144,
    "mm_tokens_per_image": 256, "eos_token_id": [1, 106], "initializer_range": 0.02,
    "torch_dtype": "bfloat16", "text_config": TEXT_27B,
    "vision_config": {"model_type": "siglip_vision_model", "hidden_size": 1152,
                      "num_hidden_layers": 27, "num_attention_heads": 16, "image_size": 896,
                      "patch_size": 14, "intermediate_size": 4304}}


def test_published_1b_gives_the_preset(tmp_path):
    spec = load_spec(write_config(tmp_path / "g", PUBLISHED_1B))
    assert list(differences(spec, load_spec("gemma-3-1b"))) == []
    assert [layer.index for layer in spec.plan if layer.window is None] == [5, 11, 17, 23]
    assert {layer.position.theta for layer in spec.plan if layer.window} == {10000}


def test_published_27b_wrapper_gives_the_preset_with_transformers_defaults(tmp_path):
    result = read_hf_config(write_config(tmp_path / "g", PUBLISHED_27B))
    spec = load_spec(tmp_path / "g")
    assert list(differences(spec, load_spec("gemma-3-27b"))) == []
    defaulted = {d.key for d in result.defaulted}
    assert {"text_config.vocab_size", "text_config.max_position_embeddings",
            "text_config.rope_theta", "text_config.rope_local_base_freq",
            "text_config.sliding_window_pattern", "text_config.tie_word_embeddings"} <= defaulted
    glob = [layer for layer in spec.plan if layer.window is None]
    assert [layer.index for layer in glob] == list(range(5, 62, 6))
    assert {(p.position.theta, p.position.scaling.factor) for p in glob} == {(1e6, 8.0)}
    assert all(layer.position.scaling is None for layer in spec.plan if layer.window)


def test_the_27b_text_config_alone_reads_the_same(tmp_path):
    spec = load_spec(write_config(tmp_path / "g", TEXT_27B))
    assert list(differences(spec, load_spec("gemma-3-27b"))) == []


@pytest.mark.parametrize("preset", ["gemma-3-1b", "gemma-3-27b"])
def test_presets_export_as_gemma3_text_and_read_back(preset, tmp_path):
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec(preset)
    config = spec_to_hf_config(spec)
    assert config["model_type"] == "gemma3_text"
    assert config["query_pre_attn_scalar"] == {"gemma-3-1b": 256, "gemma-3-27b": 168}[preset]
    assert isinstance(config["query_pre_attn_scalar"], int)
    write_hf_config(spec, tmp_path / "ours")
    assert load_spec(tmp_path / "ours") == spec


def test_both_rope_spellings_read_alike(tmp_path):
    legacy = {**PUBLISHED_1B, "num_hidden_layers": 7, "sliding_window_pattern": 3,
              "rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    theirs = AutoConfig.for_model(**legacy)
    current = {**{k: v for k, v in legacy.items() if not k.startswith("rope")},
               "rope_parameters": theirs.rope_parameters, "layer_types": theirs.layer_types}
    a = load_spec(write_config(tmp_path / "a", legacy))
    b = load_spec(write_config(tmp_path / "b", current))
    assert list(differences(a, b)) == []
    assert [layer.layer_type for layer in a.plan] == theirs.layer_types
    assert [(layer.position.theta, bool(layer.position.scaling)) for layer in a.plan] == \
        [(1e6, True) if t == "full_attention" else (1e4, False) for t in theirs.layer_types]


def test_sandwich_and_multipliers_export_as_gemma_not_granite():
    spec = load_spec("gemma-3-1b")
    assert spec.multipliers is not None
    assert spec_to_hf_config(spec)["architectures"] == ["Gemma3ForCausalLM"]
    # (1 + w) norms before each sublayer, sqrt(d) embeddings: Gemma (1)'s class
    offset_only = tiny_spec(norm=dict(kind="rmsnorm", eps=1e-6, unit_offset=True),
                            multipliers=dict(embedding=8.0, attention=0.25))
    assert spec_to_hf_config(offset_only)["architectures"] == ["GemmaForCausalLM"]
    # with a window: VaultGemma's class (Gemma 2 less its post-sublayer norms), whose forward
    # always builds a sliding mask
    windowed = with_overrides(offset_only, ["attention.window=8"])
    assert spec_to_hf_config(windowed)["architectures"] == ["VaultGemmaForCausalLM"]
    output_norms = tiny_spec(norm=dict(kind="rmsnorm", eps=1e-6, unit_offset=True,
                                       position="output"),
                             multipliers=dict(embedding=8.0, attention=0.25))
    with pytest.raises(SpecError) as err:  # Gemma's class, whose norms are a sandwich
        spec_to_hf_config(output_norms)
    assert "gemma3_text" in str(err.value) and err.value.key == "norm.position"


@pytest.mark.parametrize("change, key", [
    ({"attn_logit_softcapping": 50.0}, "attn_logit_softcapping"),
    ({"final_logit_softcapping": 30.0}, "final_logit_softcapping"),
    ({"query_pre_attn_scalar": 168.5}, "query_pre_attn_scalar"),
    ({"use_bidirectional_attention": True}, "use_bidirectional_attention"),
    ({"sliding_window": None}, "sliding_window"),
    ({"layer_types": ["full_attention"] * 3}, "layer_types"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}, "rope_parameters.rope_type"),
    ({"rope_parameters": {"full_attention": {"rope_type": "dynamic", "factor": 2.0}}},
     "rope_parameters.full_attention.rope_type"),
    ({"num_attention_heads": 5}, "num_attention_heads"),
    ({"rope_scaling": {"rope_type": "longrope", "factor": 2.0}}, "rope_scaling.rope_type"),
])
def test_bad_keys_are_named(tmp_path, change, key):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "g", {**PUBLISHED_1B, **change}))
    assert err.value.key == key


@pytest.mark.parametrize("change, key", [
    ({"text_config": {**TEXT_27B, "hidden_size": "big"}}, "text_config.hidden_size"),
    ({"text_config": {**TEXT_27B, "attn_logit_softcapping": 50.0}},
     "text_config.attn_logit_softcapping"),
    ({"tie_word_embeddings": False}, "tie_word_embeddings"),
])
def test_bad_wrapper_keys_are_named(tmp_path, change, key):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "g", {**PUBLISHED_27B, **change}))
    assert err.value.key == key


def test_export_refuses_what_gemma_cannot_hold():
    spec = load_spec("gemma-3-1b")
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(spec.replace(multipliers={**vars(spec.mults), "embedding": 30.0}))
    assert err.value.key == "multipliers.embedding"
    with pytest.raises(SpecError) as err:  # 1/0.07 is no integer's square root
        spec_to_hf_config(spec.replace(multipliers={**vars(spec.mults), "attention": 0.07}))
    assert err.value.key == "multipliers.attention"
    two = spec.replace(layers=({"select": "5::6", "attention": {"window": None},
                                "position": {"theta": 1e6}},
                               {"select": [0], "position": {"theta": 500.0}}))
    with pytest.raises(SpecError) as err:  # sliding layers with two thetas
        spec_to_hf_config(two)
    assert err.value.key == "layers"


def test_a_layer_cannot_change_the_position_kind():
    with pytest.raises(SpecError) as err:
        tiny_spec(layers=[dict(select=[1], position=dict(kind="learned"))])
    assert err.value.key == "layers" and "attention.rope: false" in str(err.value)


def test_unit_offset_needs_a_weight():
    with pytest.raises(SpecError) as err:  # (a LayerNorm's is Nemotron's LayerNorm1P)
        tiny_spec(norm=dict(kind="layernorm", eps=1e-5, unit_offset=True, weight=False))
    assert err.value.key == "norm.unit_offset"
    assert tiny_spec(norm=dict(kind="rmsnorm", eps=1e-5, unit_offset=False)).norm.unit_offset \
        is None  # one spelling: false is the same network as absent
