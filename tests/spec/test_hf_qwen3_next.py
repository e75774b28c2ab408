"""HF config.json interop for qwen3_next (Qwen3-Next): the published config.json facts import
to the preset, the preset exports to Qwen3NextForCausalLM, layer types come from layer_types or
full_attention_interval, and what the class cannot hold (or transformers refuses) is named by
its key.
"""

import pytest

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.spec.hf_import import DefaultedKeyWarning, read_hf_config
from hf_configs import network, write_config

# Qwen/Qwen3-Next-80B-A3B-Instruct's config.json, from the copies the preset's header names
# (no layer_types: full_attention_interval says which layers attend)
PUBLISHED = {
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next",
    "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643,
    "decoder_sparse_step": 1, "eos_token_id": 151645, "full_attention_interval": 4,
    "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
    "max_position_embeddings": 262144, "mlp_only_layers": [], "moe_intermediate_size": 512,
    "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 512,
    "num_experts_per_tok": 10, "num_hidden_layers": 48, "num_key_value_heads": 2,
    "output_router_logits": False, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
    "rope_scaling": None, "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16", "use_cache": True, "use_sliding_window": False,
    "vocab_size": 151936}


def test_published_config_gives_the_preset(tmp_path):
    """Every network key but mtp_layers: the file has no key for the MTP module it ships
    (read as 0; the preset says 1, from the checkpoint's mtp.* tensors)."""
    spec = load_spec(write_config(tmp_path / "d", PUBLISHED))
    preset = load_spec("qwen3-next-80b-a3b")
    assert spec.mtp_layers == 0 and preset.mtp_layers == 1
    assert network(spec) == {**network(preset), "mtp_layers": 0}


def test_published_config_reads_as_the_family_is_described(tmp_path):
    result = read_hf_config(write_config(tmp_path / "d", PUBLISHED))
    assert not result.defaulted  # every key it needs is in the file
    spec = load_spec(tmp_path / "d")
    a, f = spec.attention, spec.ffn
    assert (a.output_gate, a.qk_norm, a.rotary_dim, spec.norm.unit_offset) == (True, "head", 64,
                                                                               True)
    assert (f.n_experts, f.top_k, f.shared_width, f.shared_gate) == (512, 10, 512, True)
    assert [layer.index for layer in spec.plan if layer.attention] == list(range(3, 48, 4))
    assert all(layer.is_moe for layer in spec.plan)


def test_preset_exports_to_its_class():
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec("qwen3-next-80b-a3b")
    config = spec_to_hf_config(spec)
    assert (config["model_type"], config["architectures"]) == ("qwen3_next",
                                                               ["Qwen3NextForCausalLM"])
    assert config["layer_types"].count("full_attention") == 12
    assert config["rope_parameters"]["partial_rotary_factor"] == 0.25
    assert config["num_nextn_predict_layers"] == 1


def test_layer_types_and_dense_layers(tmp_path):
    """layer_types wins over full_attention_interval; a file with neither takes the class's
    interval 4 (noted); mlp_only_layers and decoder_sparse_step give dense layers of
    intermediate_size; a different shared width is d_shared."""
    tiny = {**PUBLISHED, "num_hidden_layers": 4, "num_experts": 8, "num_experts_per_tok": 2,
            "mlp_only_layers": [0], "decoder_sparse_step": 1,
            "shared_expert_intermediate_size": 768}
    types = ["full_attention", "linear_attention", "full_attention", "linear_attention"]
    spec = load_spec(write_config(tmp_path / "a", {**tiny, "layer_types": types}))
    assert [layer.layer_type for layer in spec.plan] == types
    assert [layer.ffn.kind for layer in spec.plan] == ["swiglu", "moe", "moe", "moe"]
    assert spec.plan[0].ffn.d_ff == 5120 and spec.ffn.d_shared == 768
    del tiny["full_attention_interval"]
    result = read_hf_config(write_config(tmp_path / "b", tiny))
    assert [note.key for note in result.defaulted] == ["full_attention_interval"]
    with pytest.warns(DefaultedKeyWarning, match="full_attention_interval"):
        assert load_spec(tmp_path / "b").plan[3].attention is not None
        dense = load_spec(write_config(tmp_path / "c", {**tiny, "num_experts": 0}))
    assert not dense.moe and dense.ffn.d_ff == 5120


@pytest.mark.parametrize("change, key", [
    (["attention.output_gate=false"], "attention.output_gate"),  # the gate is always there
    (["attention.qk_norm=full"], "attention.qk_norm"),  # q_norm/k_norm are per head
    (["norm.unit_offset=false"], "norm.unit_offset"),  # every norm is (1 + weight)
    (["ffn.shared_gate=false"], "ffn.shared_gate"),  # shared_expert_gate always
    (["ffn.router.scoring=sigmoid"], "ffn.router.scoring"),  # softmax top-k only
    (["mixer.chunk_size=32"], "mixer.chunk_size"),  # transformers scans in chunks of 64
    (['layers=[{"select": "3::4", "mixer": "attention"}, {"select": [0], "ffn": "none"}]'],
     "layers"),  # every layer has an FFN
])
def test_what_qwen3_next_cannot_hold_names_the_key(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("qwen3-next-80b-a3b", change))
    assert err.value.key == key


@pytest.mark.parametrize("key, value, named", [
    ("layer_types", ["linear_attention"] * 47, "layer_types"),
    ("layer_types", ["linear_attention"] * 47 + ["sliding_attention"], "layer_types[47]"),
    ("full_attention_interval", 0, "full_attention_interval"),
    ("linear_num_value_heads", 24, "linear_num_value_heads"),  # not a multiple of 16 key heads
    ("linear_conv_kernel_dim", 0, "linear_conv_kernel_dim"),
    ("num_experts_per_tok", 513, "num_experts_per_tok"),
    ("shared_expert_intermediate_size", 0, "shared_expert_intermediate_size"),
    ("partial_rotary_factor", 0.27, "partial_rotary_factor"),  # 69 dims: not pairs
    ("mlp_only_layers", [48], "mlp_only_layers[0]"),
])
def test_bad_keys_are_named(key, value, named, tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "d", {**PUBLISHED, key: value}))
    assert err.value.key == named
