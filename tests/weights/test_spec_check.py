"""A preset is checked against a checkpoint's config.json by what shapes the network."""

from __future__ import annotations

import json

import pytest

from archscope.errors import InputError
from archscope.spec import load_spec
from archscope.weights.spec_check import check_same_network, folder_spec

# meta-llama/Llama-3.2-1B-Instruct's config.json as published (transformers 4.45 layout)
LLAMA_32_1B_INSTRUCT = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
    "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False,
    "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
    "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "transformers_version": "4.45.0.dev0", "use_cache": True, "vocab_size": 128256}


@pytest.fixture
def instruct_dir(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_32_1B_INSTRUCT))
    return tmp_path


def test_the_published_config_matches_the_preset(instruct_dir):
    check_same_network(load_spec("llama-3.2-1b"), folder_spec(instruct_dir), "config.json")


def test_a_what_if_on_the_preset_is_a_difference_named_by_key(instruct_dir):
    spec = load_spec("llama-3.2-1b", ["attention.n_kv_heads=32"])
    with pytest.raises(InputError, match=r"attention\.n_kv_heads: llama-3.2-1b has 32, the "
                                         r"checkpoint's config.json has 8"):
        check_same_network(spec, folder_spec(instruct_dir), "config.json")


def test_a_different_rope_scaling_is_named(instruct_dir):
    with pytest.raises(InputError, match=r"position\.scaling\.factor"):
        check_same_network(load_spec("llama-3.2-1b", ["position.scaling.factor=8"]),
                           folder_spec(instruct_dir), "config.json")
