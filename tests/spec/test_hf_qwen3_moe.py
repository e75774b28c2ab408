"""HF config.json interop for qwen3_moe: the published config.json imports to the preset, the
layer pattern (decoder_sparse_step, mlp_only_layers) becomes `layers` overrides and goes back as
mlp_only_layers, through transformers' own config class, and bad keys are named.
"""


import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from hf_configs import network, through_transformers, write_config

# config.json as published (sources in the preset's header and /tmp/notes/configs_2025.md)
PUBLISHED = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "vocab_size": 151936,
    "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
    "head_dim": 128, "max_position_embeddings": 40960, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "rope_scaling": None, "tie_word_embeddings": False,
    "attention_bias": False, "attention_dropout": 0.0, "hidden_act": "silu",
    "sliding_window": None, "use_sliding_window": False, "max_window_layers": 48,
    "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": True,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "output_router_logits": False,
    "router_aux_loss_coef": 0.001, "bos_token_id": 151643, "eos_token_id": 151645,
    "torch_dtype": "bfloat16", "transformers_version": "4.51.0"}
TINY = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=6,
            num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
            num_experts=8, num_experts_per_tok=2, moe_intermediate_size=64)


def test_published_config_gives_the_preset(tmp_path):
    spec = load_spec(write_config(tmp_path / "q", PUBLISHED))
    assert network(spec) == network(load_spec("qwen3-30b-a3b"))
    assert all(layer.is_moe for layer in spec.plan)


@pytest.mark.parametrize("step, only, dense", [
    (1, [], []), (2, [], [0, 2, 4]), (3, [5], [0, 1, 3, 4, 5]), (1, [0, 3], [0, 3]),
    (7, [], [0, 1, 2, 3, 4, 5])])
def test_layer_pattern_is_transformers_rule_and_round_trips(step, only, dense, tmp_path):
    config = AutoConfig.for_model("qwen3_moe", **TINY, decoder_sparse_step=step,
                                  mlp_only_layers=only)
    spec = load_spec(write_config(tmp_path / "q", config.to_dict()))
    assert [layer.index for layer in spec.plan if not layer.is_moe] == dense
    assert all(layer.ffn.d_ff == 512 for layer in spec.plan if not layer.is_moe)
    exported = spec_to_hf_config(spec)
    assert exported["model_type"] == ("qwen3" if len(dense) == 6 else "qwen3_moe")
    if len(dense) < 6:
        assert (exported["mlp_only_layers"], exported["decoder_sparse_step"]) == (dense, 1)
    assert network(through_transformers(spec, tmp_path)) == network(spec)


def test_sliding_window_covers_every_layer(tmp_path):
    config = AutoConfig.for_model("qwen3_moe", **TINY, use_sliding_window=True,
                                  sliding_window=512).to_dict()
    spec = load_spec(write_config(tmp_path / "q", config))
    assert [layer.window for layer in spec.plan] == [512] * 6
    assert network(through_transformers(spec, tmp_path)) == network(spec)


def test_a_qwen3_what_if_with_experts_exports_to_qwen3_moe(tmp_path):
    spec = load_spec("qwen3-8b", ["ffn.kind=moe", "ffn.d_ff=", "ffn.n_experts=16",
                                  "ffn.top_k=2", "ffn.d_expert=1024"])
    assert spec_to_hf_config(spec)["model_type"] == "qwen3_moe"
    assert network(through_transformers(spec, tmp_path)) == network(spec)


@pytest.mark.parametrize("change, key", [
    (["ffn.router.scaling_factor=2.0"], "ffn.router.scaling_factor"),
    (["ffn.router.method=group_limited_greedy", "ffn.router.n_group=8",
      "ffn.router.topk_group=2"], "ffn.router.method"),
    (["ffn.bias=true"], "ffn.bias"),
])
def test_what_qwen3_moe_cannot_hold_names_the_key(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("qwen3-30b-a3b", change))
    assert err.value.key == key


@pytest.mark.parametrize("key, value, named", [
    ("decoder_sparse_step", 0, "decoder_sparse_step"),
    ("decoder_sparse_step", "2", "decoder_sparse_step"),
    ("mlp_only_layers", 3, "mlp_only_layers"),
    ("mlp_only_layers", [1, 48], "mlp_only_layers[1]"),
    ("mlp_only_layers", [True], "mlp_only_layers[0]"),
    ("num_experts", -1, "num_experts"),
    ("num_local_experts", 64, "num_experts"),  # transformers' other name for it, disagreeing
    ("num_experts_per_tok", 129, "num_experts_per_tok"),
    ("norm_topk_prob", "yes", "norm_topk_prob"),
    ("moe_intermediate_size", 0, "moe_intermediate_size"),
])
def test_bad_keys_are_named(key, value, named, tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "q", {**PUBLISHED, key: value}))
    assert err.value.key == named
