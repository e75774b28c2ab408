"""HF config.json interop for glm4_moe (GLM-4.5), the MTP count (num_nextn_predict_layers) of
deepseek_v3 and glm4_moe, and Kimi K2's kimi_k2 files: the published config.json facts import
to the presets, the presets export to their class, transformers' own config and whole-head
rotation round-trip through it, and what the classes cannot hold (or transformers refuses) is
named by its key.
"""

import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.spec.hf_import import read_hf_config
from hf_configs import without_format, network, through_transformers, write_config

# config.json as published (sources in the presets' headers and /tmp/notes/configs_2025.md)
GLM_45 = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe",
    "vocab_size": 151552, "hidden_size": 5120, "intermediate_size": 12288,
    "moe_intermediate_size": 1536, "num_hidden_layers": 92, "num_attention_heads": 96,
    "num_key_value_heads": 8, "head_dim": 128, "partial_rotary_factor": 0.5,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 1000000,
    "rope_scaling": None, "tie_word_embeddings": False, "attention_bias": True,
    "attention_dropout": 0.0, "use_qk_norm": True, "hidden_act": "silu",
    "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "n_group": 1, "topk_group": 1, "norm_topk_prob": True,
    "routed_scaling_factor": 2.5, "num_nextn_predict_layers": 1, "pad_token_id": 151329,
    "eos_token_id": [151329, 151336, 151338], "torch_dtype": "bfloat16", "use_cache": True}
GLM_45_AIR = {**GLM_45, "hidden_size": 4096, "intermediate_size": 10944,
              "moe_intermediate_size": 1408, "num_hidden_layers": 46, "n_routed_experts": 128,
              "first_k_dense_replace": 1, "routed_scaling_factor": 1.0, "use_qk_norm": False}
KIMI_K2 = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
    "vocab_size": 163840, "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 64,
    "num_key_value_heads": 64, "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "max_position_embeddings": 131072, "rms_norm_eps": 1e-06, "rope_theta": 50000.0,
    "rope_scaling": {"type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096,
                     "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0},
    "tie_word_embeddings": False, "attention_bias": False, "hidden_act": "silu",
    "n_routed_experts": 384, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "n_group": 1, "topk_group": 1,
    "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": True,
    "routed_scaling_factor": 2.827, "num_nextn_predict_layers": 0,
    "bos_token_id": 163584, "eos_token_id": 163585}
TINY = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
            num_attention_heads=8, num_key_value_heads=2, head_dim=32, n_routed_experts=16,
            num_experts_per_tok=4, moe_intermediate_size=64, n_group=4, topk_group=2,
            first_k_dense_replace=1, max_position_embeddings=4096, use_qk_norm=True,
            attention_bias=True)


@pytest.mark.parametrize("published, preset", [(GLM_45, "glm-4.5"), (GLM_45_AIR, "glm-4.5-air"),
                                               (KIMI_K2, "kimi-k2")])
def test_published_config_gives_the_preset(published, preset, tmp_path):
    spec = load_spec(write_config(tmp_path / "d", published))
    # the copies read here leave out the quantization_config that names the checkpoint's format
    assert network(spec) == without_format(network(load_spec(preset)))


def test_glm_45_reads_as_the_family_is_described(tmp_path):
    spec = load_spec(write_config(tmp_path / "d", GLM_45))
    a, r = spec.attention, spec.ffn.routing
    assert (a.bias, a.has_out_bias, a.qk_norm, a.rotary_fraction, a.rotary_dim) == (
        True, False, "head", 0.5, 64)
    assert (r.method, r.scoring, r.correction_bias, r.scaling_factor) == (
        "noaux_tc", "sigmoid", True, 2.5)
    assert [layer.index for layer in spec.plan if not layer.is_moe] == [0, 1, 2]
    assert spec.mtp_layers == 1


@pytest.mark.parametrize("preset, model_type", [
    ("glm-4.5", "glm4_moe"), ("glm-4.5-air", "glm4_moe"), ("kimi-k2", "deepseek_v3"),
    ("deepseek-v3", "deepseek_v3")])
def test_presets_export_to_their_class(preset, model_type):
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec(preset)
    config = spec_to_hf_config(spec)
    assert config["model_type"] == model_type
    assert config["num_nextn_predict_layers"] == spec.mtp_layers


def test_partial_rotation_is_written_where_transformers_keeps_it():
    config = spec_to_hf_config(load_spec("glm-4.5"))
    assert config["rope_parameters"]["partial_rotary_factor"] == 0.5
    assert (config["attention_bias"], config["use_qk_norm"]) == (True, True)
    hf = AutoConfig.for_model(**config)
    assert hf.rope_parameters["partial_rotary_factor"] == 0.5 and hf.num_mtp_layers == 1


def test_transformers_default_config_imports_and_round_trips(tmp_path):
    """As transformers 5 saves it: partial_rotary_factor inside rope_parameters."""
    config = AutoConfig.for_model("glm4_moe", **TINY).to_dict()
    assert "partial_rotary_factor" not in config  # only in rope_parameters
    spec = load_spec(write_config(tmp_path / "d", config))
    a, f = spec.attention, spec.ffn
    assert (a.rotary_fraction, a.qk_norm, f.n_experts, f.top_k, f.shared_experts) == (
        0.5, "head", 16, 4, 1)
    assert spec.mtp_layers == 1  # Glm4MoeConfig's num_mtp_layers default
    assert network(through_transformers(spec, tmp_path)) == network(spec)


def test_a_file_without_partial_rotary_factor_takes_the_class_default(tmp_path):
    config = {k: v for k, v in GLM_45.items() if k != "partial_rotary_factor"}
    result = read_hf_config(write_config(tmp_path / "d", config))
    assert result.mapping["attention"]["rotary_fraction"] == 0.5
    assert "partial_rotary_factor" in [d.key for d in result.defaulted]


def test_whole_head_rotation_is_one_spelling(tmp_path):
    spec = load_spec(write_config(tmp_path / "d", {**GLM_45, "partial_rotary_factor": 1.0}))
    assert spec.attention.rotary_fraction is None and spec.attention.rotary_dim == 128
    assert network(through_transformers(spec, tmp_path)) == network(spec)


def test_deepseek_v3_reads_the_mtp_count_under_either_name(tmp_path):
    from test_hf_deepseek_v3 import PUBLISHED

    assert load_spec(write_config(tmp_path / "a", PUBLISHED)).mtp_layers == 1
    other = {**{k: v for k, v in PUBLISHED.items() if k != "num_nextn_predict_layers"},
             "num_mtp_layers": 2}
    assert load_spec(write_config(tmp_path / "b", other)).mtp_layers == 2


@pytest.mark.parametrize("change, key", [
    (["attention.out_bias=true"], "attention.out_bias"),  # Glm4Moe's o_proj has no bias
    (["attention.qk_norm=full"], "attention.qk_norm"),  # use_qk_norm is per head
    (["ffn.router.scoring=softmax"], "ffn.router.scoring"),
])
def test_what_glm4_moe_cannot_hold_names_the_key(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("glm-4.5", change))
    assert err.value.key == key


@pytest.mark.parametrize("change, key", [
    (["attention.rotary_fraction=0"], "attention.rotary_fraction"),
    (["attention.rotary_fraction=1.5"], "attention.rotary_fraction"),
    (["attention.rotary_fraction=0.2"], "attention.rotary_fraction"),  # 25 dims: not pairs
    (["mtp_layers=-1"], "mtp_layers"),
])
def test_the_spec_refuses_what_cannot_run(change, key):
    with pytest.raises(SpecError) as err:
        load_spec("glm-4.5", change)
    assert err.value.key == key


def test_partial_rotation_is_gqa_only_and_model_wide():
    with pytest.raises(SpecError) as err:
        load_spec("deepseek-v3", ["attention.rotary_fraction=0.5"])
    assert err.value.key == "attention.rotary_fraction"
    with pytest.raises(SpecError) as err:
        load_spec("glm-4.5", ['layers=[{"select": "0:1", "attention": {"rotary_fraction": 0.25}}]'])
    assert err.value.key == "layers"


def test_other_classes_refuse_partial_rotation_and_mtp():
    """Only glm4_moe rotates part of a head (the export picks it); only deepseek_v3 and
    glm4_moe say how many MTP modules ship: elsewhere the read-back names the key."""
    assert spec_to_hf_config(load_spec("qwen3-8b", ["attention.rotary_fraction=0.5"]))[
        "model_type"] == "glm4_moe"
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("qwen3-8b", ["mtp_layers=1"]))
    assert err.value.key == "mtp_layers"


@pytest.mark.parametrize("key, value, named", [
    ("partial_rotary_factor", 0, "partial_rotary_factor"),
    ("partial_rotary_factor", 2.0, "partial_rotary_factor"),
    ("partial_rotary_factor", "half", "partial_rotary_factor"),
    ("num_nextn_predict_layers", -1, "num_nextn_predict_layers"),
    ("topk_method", "greedy", "topk_method"),
    ("scoring_func", "softmax", "scoring_func"),
    ("n_group", 3, "n_group"),  # 160 experts do not split into 3 groups
    ("topk_group", 2, "topk_group"),  # more than n_group
    ("num_experts_per_tok", 161, "num_experts_per_tok"),
    ("use_qk_norm", "yes", "use_qk_norm"),
    ("first_k_dense_replace", -1, "first_k_dense_replace"),
])
def test_bad_keys_are_named(key, value, named, tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "d", {**GLM_45, key: value}))
    assert err.value.key == named
