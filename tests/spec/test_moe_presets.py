"""The MoE long tail's presets (qwen2-57b-a14b, olmoe-1b-7b, minimax-m2, ernie-4.5-21b-a3b): the
published config.json (the values each preset's header cites) reads as the preset; total and active
parameters equal transformers' class built on the meta device from that config (active: all
parameters less each MoE layer's unused experts, counted from the built modules on both sides);
and the estimated KV cache equals what archscope's cache holds after a real prefill of a
variant with 2 layers (its attention as published, its experts and vocabulary shrunk), which
scales to the preset's layers."""

from __future__ import annotations

import warnings

import pytest
import torch
import transformers

from archscope.estimate import count_params
from archscope.nn import build_model
from archscope.spec import load_spec, with_overrides
from hf_configs import without_format, network, write_config
from parity import active_params_from_modules, shrunk_cache_bytes, their_active_params

PUBLISHED = {
    "ernie-4.5-21b-a3b": {
        "architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe",
        "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0, "hidden_act": "silu",
        "hidden_size": 2560, "intermediate_size": 12288, "max_position_embeddings": 131072,
        "num_attention_heads": 20, "num_key_value_heads": 4, "head_dim": 128,
        "num_hidden_layers": 28, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
        "use_bias": False, "tie_word_embeddings": True, "vocab_size": 103424,
        "moe_num_experts": 64, "moe_k": 6, "moe_intermediate_size": 1536,
        "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": 27,
        "moe_layer_interval": 1},
    "qwen2-57b-a14b": {
        "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe",
        "bos_token_id": 151643, "eos_token_id": 151643, "decoder_sparse_step": 1,
        "hidden_act": "silu", "hidden_size": 3584, "intermediate_size": 18944,
        "max_position_embeddings": 131072, "max_window_layers": 28,
        "moe_intermediate_size": 2560, "norm_topk_prob": False, "num_attention_heads": 28,
        "num_experts": 64, "num_experts_per_tok": 8, "num_hidden_layers": 28,
        "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
        "shared_expert_intermediate_size": 20480, "sliding_window": 131072,
        "tie_word_embeddings": False, "use_sliding_window": False, "vocab_size": 151936},
    "olmoe-1b-7b": {
        "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "attention_bias": False,
        "clip_qkv": None, "eos_token_id": 50279, "pad_token_id": 1, "hidden_act": "silu",
        "hidden_size": 2048, "intermediate_size": 1024, "max_position_embeddings": 4096,
        "norm_topk_prob": False, "num_attention_heads": 16, "num_experts": 64,
        "num_experts_per_tok": 8, "num_hidden_layers": 16, "num_key_value_heads": 16,
        "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False,
        "vocab_size": 50304},
    "minimax-m2": {
        "architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2",
        "vocab_size": 200064, "hidden_size": 3072, "intermediate_size": 1536,
        "num_hidden_layers": 62, "num_attention_heads": 48, "num_key_value_heads": 8,
        "head_dim": 128, "max_position_embeddings": 196608, "num_local_experts": 256,
        "num_experts_per_tok": 8, "scoring_func": "sigmoid", "use_routing_bias": True,
        "use_qk_norm": True, "qk_norm_type": "per_layer", "rotary_dim": 64,
        "rope_theta": 5000000, "rms_norm_eps": 1e-06, "hidden_act": "silu",
        "shared_intermediate_size": 0, "attn_type_list": [1] * 62,
        "use_mtp": True, "num_mtp_modules": 3, "mtp_transformer_layers": 1,
        "tie_word_embeddings": False},
}
# the variant whose cache is measured: 2 layers, the attention as published, small experts
SHRUNK = ["n_layers=2", "vocab_size=256", "ffn.n_experts=4", "ffn.top_k=2", "ffn.d_expert=16"]
SHRUNK_SHARED = {"qwen2-57b-a14b": ["ffn.d_shared=24"]}
BATCH, TOKENS = 2, 9


def _theirs(name: str):
    config = transformers.AutoConfig.for_model(**PUBLISHED[name])
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config), config



@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_the_published_config_reads_as_the_preset(name, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the keys a published file leaves to the class
        spec = load_spec(write_config(tmp_path / "d", PUBLISHED[name]))
    # the copies read here leave out the quantization_config that names the checkpoint's format
    assert network(spec) == without_format(network(load_spec(name)))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_total_and_active_parameters_equal_transformers_on_meta(name):
    spec = load_spec(name)
    theirs, config = _theirs(name)
    counted = count_params(spec)
    assert counted.total == sum(p.numel() for p in theirs.parameters())
    assert counted.active == their_active_params(theirs, config.num_experts_per_tok) \
        == active_params_from_modules(build_model(spec, device="meta"))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_the_cache_of_a_two_layer_variant_holds_the_estimate(name):
    preset = load_spec(name)
    spec = with_overrides(preset, SHRUNK + SHRUNK_SHARED.get(name, []))
    shrunk_cache_bytes(preset, spec, batch=BATCH, tokens=TOKENS)
