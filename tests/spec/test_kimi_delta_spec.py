"""The Kimi Delta Attention mixer's spec and the kimi_linear / bailing_hybrid readers: the
published Kimi Linear config.json (its linear_attn_config sub-dict, 1-indexed layer lists and
attribute_map names) read as the preset, and what is refused, naming the key."""

from __future__ import annotations

import warnings

import pytest

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.kimi_delta import DEFAULT_CHUNK, HF_KEYS, SUB_KEYS, KimiDeltaSpec
from hf_configs import network, write_config

KDA = dict(kind="kimi_delta", n_heads=32, head_dim=128, conv_kernel=4)
# moonshotai/Kimi-Linear-48B-A3B-Instruct's config.json as the preset's header cites it (the
# keys transformers reads; auto_map, dtype and quantization left out)
PUBLISHED = {
    "model_type": "kimi_linear", "architectures": ["KimiLinearForCausalLM"],
    "bos_token_id": 163584, "eos_token_id": 163586, "pad_token_id": 163839,
    "first_k_dense_replace": 1, "head_dim": 72, "hidden_act": "silu", "hidden_size": 2304,
    "intermediate_size": 9216, "kv_lora_rank": 512,
    "linear_attn_config": {"full_attn_layers": [4, 8, 12, 16, 20, 24, 27], "head_dim": 128,
                           "kda_layers": [1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19,
                                          21, 22, 23, 25, 26],
                           "num_heads": 32, "short_conv_kernel_size": 4},
    "mla_use_nope": True, "model_max_length": 1048576, "moe_intermediate_size": 1024,
    "moe_layer_freq": 1, "moe_renormalize": True, "moe_router_activation_func": "sigmoid",
    "num_attention_heads": 32, "num_expert_group": 1, "num_experts": 256,
    "num_experts_per_token": 8, "num_hidden_layers": 27, "num_key_value_heads": 32,
    "num_nextn_predict_layers": 0, "num_shared_experts": 1, "q_lora_rank": None,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05,
    "rope_scaling": None, "rope_theta": 10000.0, "routed_scaling_factor": 2.446,
    "tie_word_embeddings": False, "topk_group": 1, "use_grouped_topk": True,
    "v_head_dim": 128, "vocab_size": 163840}


def test_reads_and_derives():
    m = from_mapping(KimiDeltaSpec, KDA)
    assert (m.chunk_size, m.gates, m.gate_lower_bound) == (DEFAULT_CHUNK, "low_rank", None)
    assert (m.qkv_dim, m.conv_dim) == (4096, 3 * 4096)
    assert from_mapping(KimiDeltaSpec, to_mapping(m)) == m
    assert set(HF_KEYS.values()) <= set(KimiDeltaSpec.__dataclass_fields__)
    assert set(SUB_KEYS.values()) == set(HF_KEYS)


@pytest.mark.parametrize("changes, key, words", [
    (dict(head_dim=0), "head_dim", "positive"),
    (dict(gates="diagonal"), "gates", "low_rank"),
    (dict(gate_lower_bound=5.0), "gate_lower_bound", "negative"),
    (dict(n_key_heads=4), "n_key_heads", "unknown key"),
])
def test_refuses_naming_the_key(changes, key, words):
    with pytest.raises(SpecError) as err:
        from_mapping(KimiDeltaSpec, {**KDA, **changes}, "mixer")
    assert key in str(err.value) and words in str(err.value)


def _read(tmp_path, config: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_spec(write_config(tmp_path / "model", config))


def test_the_published_config_reads_as_the_preset(tmp_path):
    assert network(_read(tmp_path, PUBLISHED)) == network(load_spec("kimi-linear-48b-a3b"))


@pytest.mark.parametrize("changes, key, words", [
    (dict(mla_use_nope=False), "mla_use_nope", "never rotates"),
    (dict(moe_layer_freq=2), "moe_layer_freq", "only 1"),
    (dict(moe_router_activation_func="softmax"), "moe_router_activation_func", "sigmoid"),
    (dict(linear_attn_config={**PUBLISHED["linear_attn_config"], "full_attn_layers": [4]}),
     "kda_layers", "neither"),
    (dict(linear_attn_config={**PUBLISHED["linear_attn_config"], "kda_layers": [0]}),
     "kda_layers[0]", "1-indexed"),
    (dict(num_experts_per_token=300), "num_experts_per_token", "cannot exceed"),
])
def test_kimi_linear_refuses_naming_the_key(tmp_path, changes, key, words):
    with pytest.raises(SpecError) as err:
        _read(tmp_path, {**PUBLISHED, **changes})
    assert err.value.key and key in err.value.key and words in str(err.value)


def test_bailing_hybrid_reads_the_linear_keys_save_pretrained_writes(tmp_path):
    """save_pretrained writes head_dim as qk_rope_head_dim's and linear_head_dim apart; the
    KDA's width is linear_head_dim (transformers reads it back so), head_dim without it."""
    base = {"model_type": "bailing_hybrid", "num_hidden_layers": 6, "qk_rope_head_dim": 64,
            "head_dim": 64, "kda_safe_gate": True, "kda_lower_bound": -5.0}
    saved = _read(tmp_path / "a", {**base, "linear_head_dim": 128})
    assert (saved.mixer.head_dim, saved.mixer.gates, saved.mixer.gate_lower_bound) == \
        (128, "full_rank", -5.0)
    assert saved.attention.head_gate and saved.position.kind == "rope"
    assert _read(tmp_path / "b", base).mixer.head_dim == 64
    unsafe = _read(tmp_path / "c", {**base, "kda_safe_gate": False})
    assert unsafe.mixer.gate_lower_bound is None
