"""HF config.json interop for deepseek_v3: the published config.json imports to the preset, a
spec with a sigmoid noaux_tc router exports to deepseek_v3, and what DeepseekV3 cannot hold is
named. (A tiny config on top of DeepseekV3Config's defaults, read, round-tripped and built, is
the conformance cases'.)
"""


import pytest

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from hf_configs import network, write_config

# config.json as published (sources in the preset's header and /tmp/notes/configs_2025.md)
PUBLISHED = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "max_position_embeddings": 163840, "rms_norm_eps": 1e-06, "rope_theta": 10000,
    "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                     "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
    "tie_word_embeddings": False, "attention_bias": False, "hidden_act": "silu",
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "moe_layer_freq": 1, "n_group": 8, "topk_group": 4,
    "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": True,
    "routed_scaling_factor": 2.5, "seq_aux": True, "aux_loss_alpha": 0.001, "ep_size": 1,
    "num_nextn_predict_layers": 1,
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                            "quant_method": "fp8", "weight_block_size": [128, 128]},
    "bos_token_id": 0, "eos_token_id": 1, "torch_dtype": "bfloat16"}


def test_published_config_gives_the_preset(tmp_path):
    spec = load_spec(write_config(tmp_path / "d", PUBLISHED))
    assert network(spec) == network(load_spec("deepseek-v3"))
    assert [layer.index for layer in spec.plan if not layer.is_moe] == [0, 1, 2]
    r = spec.ffn.routing
    assert (r.method, r.scoring, r.correction_bias, r.n_group, r.topk_group) == (
        "noaux_tc", "sigmoid", True, 8, 4)


def test_the_preset_exports_to_deepseek_v3():
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec("deepseek-v3")
    config = spec_to_hf_config(spec)
    assert (config["model_type"], config["architectures"]) == (
        "deepseek_v3", ["DeepseekV3ForCausalLM"])
    assert (config["scoring_func"], config["topk_method"], config["norm_topk_prob"]) == (
        "sigmoid", "noaux_tc", True)


def test_deepseek_v2_is_still_deepseek_v2():
    assert spec_to_hf_config(load_spec("deepseek-v2"))["model_type"] == "deepseek_v2"


@pytest.mark.parametrize("change, key", [
    (["ffn.router.method=group_limited_greedy"], "ffn.router.method"),
    (["ffn.router.scoring=softmax"], "ffn.router.scoring"),
    (["ffn.bias=true"], "ffn.bias"),
])
def test_what_deepseek_v3_cannot_hold_names_the_key(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("deepseek-v3", change))
    assert err.value.key == key


@pytest.mark.parametrize("change, key", [
    (["ffn.router.correction_bias=false"], "ffn.router.correction_bias"),
    # one expert a group: noaux_tc scores a group by its best two
    (["ffn.router.n_group=256", "ffn.router.topk_group=8"], "ffn.router.n_group"),
    (["ffn.router.n_group=6"], "ffn.router.n_group"),  # 256 experts do not split into 6
])
def test_the_spec_refuses_a_router_that_cannot_run(change, key):
    with pytest.raises(SpecError) as err:
        load_spec("deepseek-v3", change)
    assert err.value.key == key


@pytest.mark.parametrize("key, value, named", [
    ("topk_method", "greedy", "topk_method"),
    ("scoring_func", "softmax", "scoring_func"),
    ("moe_layer_freq", 2, "moe_layer_freq"),
    ("rope_interleave", False, "rope_interleave"),
    ("n_group", 0, "n_group"),
    ("n_group", 6, "n_group"),  # 256 experts do not split into 6 groups
    ("n_group", 3, "topk_group"),  # fewer groups than topk_group
    ("topk_group", 9, "topk_group"),
    ("num_experts_per_tok", 257, "num_experts_per_tok"),
    ("routed_scaling_factor", 0, "routed_scaling_factor"),
])
def test_bad_keys_are_named(key, value, named, tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "d", {**PUBLISHED, key: value}))
    assert err.value.key == named
