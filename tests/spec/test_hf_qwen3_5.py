"""HF config.json interop for Qwen3.5 (qwen3_5, qwen3_5_moe and their text models): the published
config.json of Qwen3.5-0.8B reads as the preset, its text_config alone (qwen3_5_text) too; the
presets export to Qwen3_5ForCausalLM and Qwen3_5MoeForCausalLM; the projections' layout picks
the class (Qwen3-Next's fused, Qwen3.5's split); what the classes cannot hold, and what a file
gets wrong, is named by its key (text_config.<key> in a wrapper).
"""

import pytest

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from hf_configs import network, write_config

_TYPES = (["linear_attention"] * 3 + ["full_attention"]) * 6
# Qwen/Qwen3.5-0.8B's config.json, as the preset's header says where it was read
TEXT_0_8B = {
    "attention_bias": False, "attention_dropout": 0.0, "attn_output_gate": True,
    "dtype": "bfloat16", "eos_token_id": 248044, "full_attention_interval": 4, "head_dim": 256,
    "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02,
    "intermediate_size": 3584, "layer_types": _TYPES, "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 16,
    "linear_value_head_dim": 128, "max_position_embeddings": 262144, "mlp_only_layers": [],
    "model_type": "qwen3_5_text", "mtp_num_hidden_layers": 1,
    "mtp_use_dedicated_embeddings": False, "num_attention_heads": 8, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "tie_word_embeddings": True,
    "use_cache": True, "vocab_size": 248320, "mamba_ssm_dtype": "float32",
    "rope_parameters": {"mrope_interleaved": True, "mrope_section": [11, 11, 10],
                        "rope_type": "default", "rope_theta": 10000000,
                        "partial_rotary_factor": 0.25}}
PUBLISHED_0_8B = {
    "architectures": ["Qwen3_5ForConditionalGeneration"], "image_token_id": 248056,
    "model_type": "qwen3_5", "text_config": TEXT_0_8B, "tie_word_embeddings": True,
    "transformers_version": "4.57.0.dev0", "video_token_id": 248057,
    "vision_config": {"deepstack_visual_indexes": [], "depth": 12,
                      "hidden_act": "gelu_pytorch_tanh", "hidden_size": 768, "in_channels": 3,
                      "initializer_range": 0.02, "intermediate_size": 3072,
                      "model_type": "qwen3_5", "num_heads": 12,
                      "num_position_embeddings": 2304, "out_hidden_size": 1024,
                      "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2},
    "vision_end_token_id": 248054, "vision_start_token_id": 248053}


def test_published_config_gives_the_preset(tmp_path):
    """The wrapper's file and its text_config alone (the text model's type) read alike."""
    preset = network(load_spec("qwen3.5-0.8b"))
    assert network(load_spec(write_config(tmp_path / "w", PUBLISHED_0_8B))) == preset
    text = {**TEXT_0_8B, "architectures": ["Qwen3_5ForCausalLM"]}
    assert network(load_spec(write_config(tmp_path / "t", text))) == preset


def test_presets_export_to_their_classes():
    """(Their round trips through transformers are test_hf.py's, for every preset.)"""
    for name, model_type, hf_class in [("qwen3.5-0.8b", "qwen3_5_text", "Qwen3_5ForCausalLM"),
                                       ("qwen3.5-35b-a3b", "qwen3_5_moe_text",
                                        "Qwen3_5MoeForCausalLM")]:
        config = spec_to_hf_config(load_spec(name))
        assert (config["model_type"], config["architectures"]) == (model_type, [hf_class])
        assert config["mtp_num_hidden_layers"] == 1
        assert "decoder_sparse_step" not in config and "mlp_only_layers" not in config
    # the same network with Qwen3-Next's fused projections is Qwen3-Next's
    fused = spec_to_hf_config(load_spec("qwen3.5-35b-a3b", ["mixer.projections=fused"]))
    assert fused["model_type"] == "qwen3_next"


@pytest.mark.parametrize("name, change, key", [
    # Qwen3VLMoeTextTopKRouter always renormalises
    ("qwen3.5-35b-a3b", ["ffn.router.normalize=false"], "ffn.router.normalize"),
    ("qwen3.5-35b-a3b", ["attention.output_gate=false"], "attention.output_gate"),
    ("qwen3.5-0.8b", ["norm.unit_offset=false"], "norm.unit_offset"),
    ("qwen3.5-0.8b", ["mixer.chunk_size=32"], "mixer.chunk_size"),  # chunks of 64
])
def test_what_qwen3_5_cannot_hold_names_the_key(name, change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec(name, change))
    assert err.value.key == key


@pytest.mark.parametrize("key, value", [
    ("layer_types", ["linear_attention"] * 23 + ["sliding_attention"]),
    ("linear_num_value_heads", 24),  # not a multiple of the 16 key heads
    ("linear_conv_kernel_dim", 0),
    ("intermediate_size", 0),
    ("mtp_num_hidden_layers", -1),
    ("mtp_num_hidden_layers", 10**9),  # beyond mtp_layers' limit
])
def test_a_wrappers_bad_text_config_names_its_key(tmp_path, key, value):
    bad = {**PUBLISHED_0_8B, "text_config": {**TEXT_0_8B, key: value}}
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "m", bad))
    assert err.value.key.startswith(f"text_config.{key}")


def test_a_moe_text_configs_top_k_is_checked(tmp_path):
    moe = {k: v for k, v in TEXT_0_8B.items() if k not in ("intermediate_size", "mlp_only_layers")}
    moe.update(model_type="qwen3_5_moe_text", num_experts=4, num_experts_per_tok=5,
               moe_intermediate_size=64, shared_expert_intermediate_size=64)
    wrapper = {**PUBLISHED_0_8B, "model_type": "qwen3_5_moe", "text_config": moe}
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "m", wrapper))
    assert err.value.key == "text_config.num_experts_per_tok"
