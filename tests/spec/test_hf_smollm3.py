"""HF config.json interop for smollm3: the preset's config.json imports to the preset,
transformers' own default rule (no_rope_layer_interval) gives the same NoPE layers, a window on
the NoPE layers comes from use_sliding_window, and rope: false is refused where it cannot hold.
"""


import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config, write_hf_config
from archscope.spec.resolved import differences
from parity import tiny_spec
from hf_configs import write_config

PUBLISHED = {"architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3",
             "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 11008,
             "num_hidden_layers": 36, "num_attention_heads": 16, "num_key_value_heads": 4,
             "max_position_embeddings": 65536, "rms_norm_eps": 1e-06, "rope_theta": 5000000.0,
             "rope_scaling": None, "tie_word_embeddings": True, "attention_bias": False,
             "mlp_bias": False, "hidden_act": "silu", "sliding_window": None,
             "use_sliding_window": False, "max_window_layers": 28, "no_rope_layer_interval": 4,
             "no_rope_layers": [1, 1, 1, 0] * 9, "layer_types": ["full_attention"] * 36,
             "eos_token_id": 128012}


def test_published_config_gives_the_preset(tmp_path):
    spec = load_spec(write_config(tmp_path / "smol", PUBLISHED))
    assert list(differences(spec, load_spec("smollm3-3b"))) == []
    assert [layer.index for layer in spec.plan if not layer.attention.rope] == list(range(3, 36, 4))


def test_interval_rule_without_the_list(tmp_path):
    config = {k: v for k, v in PUBLISHED.items() if k != "no_rope_layers"}
    spec = load_spec(write_config(tmp_path / "smol", {**config, "no_rope_layer_interval": 3}))
    theirs = AutoConfig.for_model(**{**config, "no_rope_layer_interval": 3}).no_rope_layers
    assert [int(layer.attention.rope) for layer in spec.plan] == theirs


def test_window_goes_on_the_nope_layers_by_default(tmp_path):
    config = {k: v for k, v in PUBLISHED.items() if k != "layer_types"}
    config.update(use_sliding_window=True, sliding_window=4096)
    spec = load_spec(write_config(tmp_path / "smol", config))
    windowed = [layer.index for layer in spec.plan if layer.window]
    assert windowed == [layer.index for layer in spec.plan if not layer.attention.rope]
    assert spec_to_hf_config(spec)["layer_types"] == AutoConfig.for_model(**config).layer_types


@pytest.mark.parametrize("change, key", [
    ({"no_rope_layers": [1, 2] * 18}, "no_rope_layers[1]"),
    ({"no_rope_layers": [1, 0]}, "no_rope_layers"),
    ({"no_rope_layer_interval": 0}, "no_rope_layer_interval"),
    ({"layer_types": ["sliding_attention"] * 36, "sliding_window": 4096}, "layer_types"),
])
def test_bad_keys_are_named(tmp_path, change, key):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "smol", {**PUBLISHED, **change}))
    assert err.value.key == key


def test_round_trip(tmp_path):
    spec = load_spec("smollm3-3b")
    folder = tmp_path / "out"
    write_hf_config(spec, folder)
    back = load_spec(folder)
    assert back == spec


def test_nope_spec_exports_as_smollm3_and_plain_as_llama():
    nope = tiny_spec(layers=[dict(select=[1], attention=dict(rope=False))])
    assert spec_to_hf_config(nope)["model_type"] == "smollm3"
    assert spec_to_hf_config(tiny_spec())["model_type"] == "llama"


def test_rope_false_on_mla_names_the_key():
    with pytest.raises(SpecError) as err:
        tiny_spec(attention=dict(kind="mla", n_heads=4, kv_lora_rank=16, qk_nope_head_dim=8,
                                 qk_rope_head_dim=8, v_head_dim=8, rope=False))
    assert "rope" in str(err.value.key) and "RoPE" in str(err.value)


def test_rope_false_without_rope_positions_is_refused():
    with pytest.raises(SpecError) as err:
        tiny_spec(position=dict(kind="learned"), attention=dict(rope=False))
    assert err.value.key == "attention.rope"
