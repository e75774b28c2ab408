"""Hunyuan-A13B (preset hunyuan-a13b, transformers' hunyuan_v1_moe): the published config.json
reads as the preset; total and active parameters equal transformers' HunYuanMoEV1ForCausalLM
built on the meta device from that config; the estimated KV cache equals what archscope's cache
holds after a real prefill of a 2-layer variant (its attention as published, its experts and
vocabulary shrunk). And what only Hunyuan has: the QK-norm after RoPE needs a weighted QK-norm,
and the published keys transformers' class leaves unread are refused, naming the key, where that
class would build something else.

The published file (Tencent's, copied below; source in the preset's header) says model_type
"hunyuan", Tencent's remote code, and attention_head_dim instead of head_dim: transformers 5
registers the class as hunyuan_v1_moe and reads only head_dim (it cannot build the file as it
is: head_dim null). The file is read here as hunyuan_v1_moe, and transformers' class is given
head_dim 128, the file's attention_head_dim.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import transformers

from archscope.errors import SpecError
from archscope.estimate import count_params
from archscope.nn import build_model
from archscope.spec import load_spec, with_overrides
from hf_configs import network, write_config
from parity import active_params_from_modules, shrunk_cache_bytes, their_active_params

# Tencent-Hunyuan/Hunyuan-A13B models/config.json (as forked in tianyu1412/Hunyuan-A13B, commit
# df832ebcc42e64db91ec1a4eadb90c296f3c7346), every key, the 32-entry lists written as products
PUBLISHED = {
    "add_classification_head": False, "anyres_pooling_size": 2,
    "anyres_vit_max_image_size": None, "anyres_vit_two_views": False,
    "architectures": ["HunYuanMoEV1ForCausalLM"], "attention_bias": False,
    "attention_dropout": 0.1, "attention_head_dim": 128,
    "auto_map": {"AutoConfig": "configuration_hunyuan.HunYuanConfig",
                 "AutoModel": "hunyuan.HunYuanModel",
                 "AutoModelForCausalLM": "hunyuan.HunYuanMoEV1ForCausalLM"},
    "bos_token_id": 1, "cla_share_factor": 2, "class_num": 0, "dense_list": [4096, 0],
    "eod_token_id": 127967, "eos_token_id": 127960, "group_limited_greedy": False,
    "hidden_act": "silu", "hidden_size": 4096, "im_end_id": 6, "im_newline_id": 12,
    "im_start_id": 5, "image_token_id": 9, "initializer_range": 0.02,
    "intermediate_size": 3072, "kv_lora_rank": None, "mask_init_id": 13,
    "max_position_embeddings": 32768, "mlp_bias": False, "model_type": "hunyuan",
    "moe_drop_tokens": False, "moe_intermediate_size": [3072] * 32,
    "moe_layer_num_skipped": 0, "moe_random_routing_dropped_token": False,
    "moe_topk": [8] * 32, "n_group": None, "norm_topk_prob": True, "norm_type": "rms",
    "num_attention_heads": 32, "num_experts": 64, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "num_media_embeds": 257, "num_shared_expert": [1] * 32,
    "org_vocab_size": 128167, "pad_id": 127961, "pad_token_id": 127961, "pool_type": "last",
    "position_embedding_xdrope": False, "pretraining_tp": 1, "q_lora_rank": None,
    "qk_nope_head_dim": None, "qk_rope_head_dim": None, "rms_norm_eps": 1e-05,
    "rope_scaling": {"alpha": 1000.0, "beta_fast": 32, "beta_slow": 1, "factor": 1.0,
                     "mscale": 1.0, "mscale_all_dim": 1.0, "type": "dynamic"},
    "rope_theta": 10000.0, "routed_scaling_factor": 1.0, "sep_token_id": 127962,
    "skip_cls_token": False, "text_end_id": 8, "text_start_id": 7,
    "tie_word_embeddings": True, "topk_group": None, "torch_dtype": "bfloat16",
    "transformers_version": "4.41.2", "use_cache": True, "use_cla": False,
    "use_mixed_mlp_moe": True, "use_mla": False, "use_qk_norm": True,
    "use_rotary_pos_emb": True, "v_head_dim": None, "video_end_id": 11, "video_start_id": 10,
    "vit_add_patchemb_bias": False, "vit_input_resolution": 224,
    "vit_mapping_type": "resampler", "vit_norm_type": "fused", "vit_patch": 1,
    "vit_path": None, "vit_remove_prenorm": False, "vit_token": 64, "vit_type": None,
    "vit_used_rms_norm": False, "vocab_size": 128167, "xdrope_section": None}
AS_REGISTERED = {**PUBLISHED, "model_type": "hunyuan_v1_moe"}  # transformers 5's type
# the variant whose cache is measured: 2 layers, the attention as published, small experts
SHRUNK = ["n_layers=2", "vocab_size=256", "ffn.n_experts=4", "ffn.top_k=2", "ffn.d_expert=16"]
BATCH, TOKENS = 2, 9
TINY = dict(model_type="hunyuan_v1_moe", vocab_size=97, hidden_size=64, intermediate_size=96,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
            num_experts=4, moe_topk=2)


def _read(config: dict, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the keys a published file leaves to the class
        return load_spec(write_config(tmp_path / "d", config))


def test_the_published_config_reads_as_the_preset(tmp_path):
    assert network(_read(AS_REGISTERED, tmp_path)) == network(load_spec("hunyuan-a13b"))



@pytest.mark.slow
def test_total_and_active_parameters_equal_transformers_on_meta():
    spec = load_spec("hunyuan-a13b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.AutoConfig.for_model(**AS_REGISTERED, head_dim=128)
    with torch.device("meta"):
        theirs = transformers.AutoModelForCausalLM.from_config(config)
    assert type(theirs).__name__ == "HunYuanMoEV1ForCausalLM"
    counted = count_params(spec)
    assert counted.total == sum(p.numel() for p in theirs.parameters())
    assert counted.active == their_active_params(theirs, 8) \
        == active_params_from_modules(build_model(spec, device="meta"))


@pytest.mark.slow
def test_the_cache_of_a_two_layer_variant_holds_the_estimate():
    preset = load_spec("hunyuan-a13b")
    spec = with_overrides(preset, SHRUNK)
    shrunk_cache_bytes(preset, spec, batch=BATCH, tokens=TOKENS)


def test_the_qk_norm_after_rope_needs_a_weighted_qk_norm():
    preset = load_spec("hunyuan-a13b")
    for qk_norm in ("null", "l2"):
        with pytest.raises(SpecError) as err:
            with_overrides(preset, [f"attention.qk_norm={qk_norm}"])
        assert err.value.key.endswith("qk_norm_after_rope")


@pytest.mark.parametrize("change, key", [
    ({"moe_intermediate_size": [96, 64]}, "moe_intermediate_size[1]"),
    ({"num_shared_expert": 2}, "num_shared_expert"),
    ({"use_cla": True}, "use_cla"),
    ({"use_qk_norm": False}, "use_qk_norm"),
    ({"num_experts": [4, 4]}, "num_experts"),
    ({"moe_topk": [2]}, "moe_topk"),
    ({"head_dim": None}, "head_dim"),
    ({"attention_head_dim": 8}, "attention_head_dim"),
    ({"mlp_bias": True}, "mlp_bias"),
])
def test_what_transformers_class_would_build_otherwise_is_refused(change, key, tmp_path):
    with pytest.raises(SpecError) as err:
        _read({**TINY, **change}, tmp_path)
    assert err.value.key == key
