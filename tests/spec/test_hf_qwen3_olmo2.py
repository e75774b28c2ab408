"""HF config.json interop for qwen3 and olmo2: the published config.json of each new preset
imports to that preset, transformers' own configs import with the family's norms, and a what-if
that adds a QK-norm exports to the class that has it (or names the key it cannot express).
"""

import json

import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config, write_hf_config
from hf_configs import network, write_config

_QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "vocab_size": 151936,
          "head_dim": 128, "max_position_embeddings": 40960, "rms_norm_eps": 1e-06,
          "rope_theta": 1000000, "rope_scaling": None, "attention_bias": False,
          "attention_dropout": 0.0, "hidden_act": "silu", "sliding_window": None,
          "use_sliding_window": False, "bos_token_id": 151643, "eos_token_id": 151645,
          "torch_dtype": "bfloat16", "transformers_version": "4.51.0"}
# config.json as published (sources in each preset's header and /tmp/notes/configs_2025.md)
PUBLISHED = {
    "qwen3-0.6b": {**_QWEN3, "hidden_size": 1024, "intermediate_size": 3072,
                   "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                   "max_window_layers": 28, "tie_word_embeddings": True},
    "qwen3-8b": {**_QWEN3, "hidden_size": 4096, "intermediate_size": 12288,
                 "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "max_window_layers": 36, "tie_word_embeddings": False},
    "qwen3-32b": {**_QWEN3, "hidden_size": 5120, "intermediate_size": 25600,
                  "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8,
                  "max_window_layers": 64, "tie_word_embeddings": False},
    "olmo-2-7b": {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2",
                  "vocab_size": 100352, "hidden_size": 4096, "intermediate_size": 11008,
                  "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
                  "max_position_embeddings": 4096, "rms_norm_eps": 1e-06, "rope_theta": 500000,
                  "rope_scaling": None, "tie_word_embeddings": False, "attention_bias": False,
                  "attention_dropout": 0.0, "hidden_act": "silu", "eos_token_id": 100257,
                  "pad_token_id": 100277, "torch_dtype": "float32",
                  "transformers_version": "4.47.0.dev0"},
}
TINY = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
            num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096)


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_config_gives_the_preset(name, tmp_path):
    spec = load_spec(write_config(tmp_path / name, PUBLISHED[name]))
    assert network(spec) == network(load_spec(name))


def test_transformers_configs_import_with_the_family_norms(tmp_path):
    qwen3 = load_spec(write_config(tmp_path / "q", AutoConfig.for_model("qwen3", **TINY).to_dict()))
    olmo2 = load_spec(write_config(tmp_path / "o", AutoConfig.for_model("olmo2", **TINY).to_dict()))
    assert (qwen3.attention.qk_norm, qwen3.norm.position) == ("head", "pre")
    assert (olmo2.attention.qk_norm, olmo2.norm.position) == ("full", "output")
    assert qwen3.attention.head_dim == 128  # Qwen3Config's default, not hidden / heads
    assert olmo2.attention.head_dim == 256 // 8


def test_qwen3_sliding_layers_round_trip(tmp_path):
    config = AutoConfig.for_model("qwen3", **TINY, use_sliding_window=True, sliding_window=512,
                                  max_window_layers=2).to_dict()
    spec = load_spec(write_config(tmp_path / "q", config))
    assert [layer.window for layer in spec.plan] == [None, None, 512, 512]
    assert spec_to_hf_config(spec)["layer_types"] == config["layer_types"]


@pytest.mark.parametrize("change, model_type", [
    (["attention.qk_norm=head"], "qwen3"),
    (["attention.qk_norm=full", "norm.position=output"], "olmo2"),
    (["attention.qk_norm=head", "norm.position=output"], "exaone4"),  # OLMo 2's block, Qwen3's
])
def test_a_llama_what_if_exports_to_the_class_with_the_norms(change, model_type, tmp_path):
    spec = load_spec("llama-3.2-1b", ["position.scaling=", *change])
    write_hf_config(spec, tmp_path / "ours")
    assert json.loads((tmp_path / "ours" / "config.json").read_text())["model_type"] == model_type
    AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    assert network(load_spec(tmp_path / "hf")) == network(spec)


@pytest.mark.parametrize("change, key", [
    (["attention.qk_norm=full"], "norm.position"),  # OLMo 2's QK-norm comes with its norms
    (["norm.position=output"], "attention.qk_norm"),  # ... and its norms with its QK-norm
])
def test_a_mix_no_class_has_names_the_key(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("qwen3-8b", ["attention.qk_norm=", *change]))
    assert err.value.key == key


def test_qk_norm_is_for_gqa_only():
    mla = ["attention.kind=mla", "attention.n_kv_heads=", "attention.head_dim=",
           "attention.kv_lora_rank=64", "attention.qk_nope_head_dim=32",
           "attention.qk_rope_head_dim=16", "attention.v_head_dim=32"]
    with pytest.raises(SpecError, match="only applies when kind is 'gqa'") as err:
        load_spec("qwen3-0.6b", mla)
    assert err.value.key == "attention.qk_norm"
