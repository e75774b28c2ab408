"""The deepseek-v3.2 preset: deepseek-ai/DeepSeek-V3.2's config.json as published (the values
the preset's header cites) reads as the preset; total and active parameters equal
transformers' DeepseekV32ForCausalLM built on the meta device from that file; and the
estimated cache (latent 512 + RoPE key 64 + indexer key 128 a token a layer) equals what
archscope's cache holds after a real prefill of a 2-layer variant (its attention and indexer
as published, its FFNs and vocabulary shrunk), which scales to the preset's 61 layers."""

from __future__ import annotations

import warnings

import pytest
import torch
import transformers

from archscope.estimate import count_params, kv_cache_bytes
from archscope.nn import build_model
from archscope.spec import load_spec
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.schema import ModelSpec
from hf_configs import network, write_config
from parity import (active_params_from_modules, checked_preset, shrunk_cache_bytes,
                    their_active_params)

# the file as published, less torch_dtype and transformers_version; its quantization_config
# names the checkpoint's format (fp8 in 128 x 128 blocks: the preset's weight_format)
PUBLISHED = {
    "architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32",
    "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                            "weight_block_size": [128, 128]},
    "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 1,
    "ep_size": 1, "first_k_dense_replace": 3, "hidden_act": "silu", "hidden_size": 7168,
    "index_head_dim": 128, "index_n_heads": 64, "index_topk": 2048,
    "initializer_range": 0.02, "intermediate_size": 18432, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1,
    "n_group": 8, "n_routed_experts": 256, "n_shared_experts": 1, "norm_topk_prob": True,
    "num_attention_heads": 128, "num_experts_per_tok": 8, "num_hidden_layers": 61,
    "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid",
    "tie_word_embeddings": False, "topk_group": 4, "topk_method": "noaux_tc",
    "use_cache": True, "v_head_dim": 128, "vocab_size": 129280}
BATCH, TOKENS = 2, 9


def test_the_published_config_reads_as_the_preset(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the keys a published file leaves to the class
        spec = load_spec(write_config(tmp_path / "d", PUBLISHED))
    assert network(spec) == network(load_spec("deepseek-v3.2"))



@pytest.mark.slow
def test_total_and_active_parameters_equal_transformers_on_meta():
    """Both from the published file and from the preset's own export: the same class, the
    same total; active = their modules less the skipped experts = ours."""
    spec, p, exported = checked_preset("deepseek-v3.2", "DeepseekV32ForCausalLM")
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**PUBLISHED))
    assert type(theirs) is type(exported)
    assert p.total == sum(x.numel() for x in theirs.parameters())
    assert p.active == their_active_params(theirs, PUBLISHED["num_experts_per_tok"]) \
        == active_params_from_modules(build_model(spec, device="meta"))
    # DeepSeek-V3's network + 61 indexers: wq_b, wk, k_norm (weight and bias), weights_proj
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert p.total == count_params(load_spec("deepseek-v3")).total + 61 * indexer


def _two_layers(preset: ModelSpec) -> ModelSpec:
    """The preset with 2 layers (layer 0 dense, layer 1 MoE, as the first dense layer and the
    MoE ones), its attention and indexer as published, FFNs and vocabulary shrunk."""
    mapping = to_mapping(preset)
    mapping.update(n_layers=2, vocab_size=256)
    mapping["ffn"].update(n_experts=4, top_k=2, d_expert=16)
    mapping["ffn"]["router"].update(n_group=2, topk_group=1)
    mapping["layers"] = [{"select": "0:1", "ffn": {"kind": "swiglu", "d_ff": 32,
                                                    "activation": "silu"}}]
    return from_mapping(ModelSpec, mapping)


@pytest.mark.slow
def test_the_cache_of_a_two_layer_variant_holds_the_estimate():
    preset = load_spec("deepseek-v3.2")
    spec = _two_layers(preset)
    assert spec.plan[1].is_moe
    held = shrunk_cache_bytes(preset, spec, "bf16", batch=BATCH, tokens=TOKENS)
    assert held == 2 * BATCH * TOKENS * (512 + 64 + 128) * 2


def test_the_whole_presets_static_cache_is_the_estimate_at_full_context():
    """Allocated on meta at 163,840 tokens: every layer's latent, RoPE key and indexer key."""
    spec = load_spec("deepseek-v3.2")
    cache = build_model(spec, device="meta").new_cache(1, spec.max_seq_len)
    assert cache.kv_nbytes() == kv_cache_bytes(spec, spec.max_seq_len, 1, "fp32")
