"""HF config.json interop for gpt_oss: the published config.json imports to the preset, the
presets export to gpt_oss (their round trip: test_hf.py's, for every preset), other settings
round-trip through transformers' own config class, and what GptOss (or the spec) cannot hold
is refused, naming the key.
"""

import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from hf_configs import network, through_transformers, write_config

_TYPES = ["sliding_attention", "full_attention"]
# config.json as published (sources in the preset's header and /tmp/notes/configs_2025.md)
PUBLISHED = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "vocab_size": 201088,
    "hidden_size": 2880, "intermediate_size": 2880, "num_hidden_layers": 24,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "max_position_embeddings": 131072, "initial_context_length": 4096, "rms_norm_eps": 1e-05,
    "rope_theta": 150000,
    "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                     "original_max_position_embeddings": 4096, "truncate": False},
    "tie_word_embeddings": False, "attention_bias": True, "attention_dropout": 0.0,
    "hidden_act": "silu", "sliding_window": 128, "layer_types": _TYPES * 12,
    "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4,
    "swiglu_limit": 7.0, "router_aux_loss_coef": 0.9, "output_router_logits": False,
    "eos_token_id": 200002, "pad_token_id": 199999, "transformers_version": "4.55.0.dev0",
    "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
        "lm_head"]}}
BIG = {**PUBLISHED, "num_hidden_layers": 36, "num_local_experts": 128,
       "layer_types": _TYPES * 18}  # gpt-oss-120b: the same keys, 36 layers, 128 experts
# the published file has no swiglu_alpha: the import takes GptOssConfig's 1.702 and says so
DEFAULTED_ALPHA = pytest.mark.filterwarnings("ignore:.*has no swiglu_alpha")
TINY = dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=4,
            num_experts_per_tok=2, sliding_window=8, max_position_embeddings=512)


@DEFAULTED_ALPHA
@pytest.mark.parametrize("name, config", [("gpt-oss-20b", PUBLISHED), ("gpt-oss-120b", BIG)])
def test_published_config_gives_the_preset(name, config, tmp_path):
    spec = load_spec(write_config(tmp_path / "d", config))
    assert network(spec) == network(load_spec(name))
    assert [layer.window for layer in spec.plan[:4]] == [128, None, 128, None]
    f = spec.ffn
    assert (f.activation, f.limit, f.bias, f.routing.bias, f.routing.normalize) == (
        "quick_gelu", 7.0, True, True, True)
    assert spec.attention.sinks and spec.position.scaling.truncate is False


@pytest.mark.parametrize("name", ["gpt-oss-20b", "gpt-oss-120b"])
def test_the_preset_exports_to_gpt_oss(name):
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec(name)
    config = spec_to_hf_config(spec)
    assert (config["model_type"], config["architectures"]) == ("gpt_oss", ["GptOssForCausalLM"])
    assert config["layer_types"] == [layer.layer_type for layer in spec.plan]
    assert (config["swiglu_limit"], config["rope_parameters"]["truncate"]) == (7.0, False)


def test_transformers_default_config_imports_and_round_trips(tmp_path):
    """GptOssConfig's defaults: layer_types even-sliding, yarn with truncate false, limit 7."""
    raw = AutoConfig.for_model("gpt_oss", **TINY).to_dict()
    spec = load_spec(write_config(tmp_path / "d", raw))
    assert [layer.window for layer in spec.plan] == [8, None, 8, None]
    assert spec.position.scaling.truncate is False and spec.ffn.limit == 7.0
    assert network(through_transformers(spec, tmp_path)) == network(spec)


@DEFAULTED_ALPHA
def test_layer_types_absent_takes_the_class_rule(tmp_path):
    config = {k: v for k, v in PUBLISHED.items() if k != "layer_types"}
    spec = load_spec(write_config(tmp_path / "d", config))
    assert network(spec) == network(load_spec("gpt-oss-20b"))


@pytest.mark.parametrize("key, value, named", [
    ("swiglu_alpha", 1.0, "swiglu_alpha"),
    ("swiglu_limit", None, "swiglu_limit"),
    ("swiglu_limit", 0, "swiglu_limit"),
    ("sliding_window", None, "sliding_window"),  # layer_types still marks sliding layers
    ("layer_types", ["sliding_attention"] * 23, "layer_types"),
    ("layer_types", ["chunked_attention"] * 24, "layer_types[0]"),
    ("num_experts_per_tok", 33, "num_experts_per_tok"),
    ("attention_bias", "yes", "attention_bias"),
    ("rope_scaling", {**PUBLISHED["rope_scaling"], "truncate": "no"}, "rope_scaling.truncate"),
])
def test_bad_keys_are_named(key, value, named, tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "d", {**PUBLISHED, key: value}))
    assert err.value.key == named


@pytest.mark.parametrize("change, key", [
    (["ffn.limit=null"], "ffn.limit"),  # GptOss always clamps
    (["ffn.activation=silu"], "ffn.activation"),  # its gate is quick_gelu
    (["ffn.bias=false"], "ffn.bias"),
    (["ffn.router.bias=false"], "ffn.router.bias"),
    (["ffn.router.normalize=false"], "ffn.router.normalize"),
    (["attention.out_bias=false"], "attention.out_bias"),  # attention_bias covers o_proj too
])
def test_what_gpt_oss_cannot_hold_names_the_key(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("gpt-oss-20b", change))
    assert err.value.key == key


@pytest.mark.parametrize("change", [["attention.bias=false"],
                                    ["position.scaling.truncate=true"],
                                    ["position.scaling.truncate=null"]])
def test_other_gpt_oss_settings_round_trip(change, tmp_path):
    spec = load_spec("gpt-oss-20b", change)
    assert network(through_transformers(spec, tmp_path)) == network(spec)


def test_a_dense_gpt_oss_exports_as_granite_swa(tmp_path):
    """Sinks and windows over a dense FFN: not gpt-oss's class (MoE only), Granite SWA's."""
    spec = load_spec("gpt-oss-20b", ["ffn.kind=swiglu", "ffn.d_ff=64", "ffn.n_experts=null",
                                     "ffn.top_k=null", "ffn.d_expert=null", "ffn.router=null",
                                     "ffn.limit=null"])
    assert spec_to_hf_config(spec)["model_type"] == "granite_swa"
    assert network(through_transformers(spec, tmp_path)) == network(spec)


@pytest.mark.parametrize("change, key", [
    (["ffn.kind=mlp", "ffn.d_ff=64", "ffn.n_experts=null", "ffn.top_k=null",
      "ffn.d_expert=null", "ffn.router=null", "ffn.activation=gelu"], "ffn.limit"),
    (["position.scaling.kind=linear", "position.scaling.beta_fast=null",
      "position.scaling.beta_slow=null"], "position.scaling.truncate"),
    (["ffn.limit=-1"], "ffn.limit"),
])
def test_the_spec_refuses_what_archscope_does_not_build(change, key):
    with pytest.raises(SpecError) as err:
        load_spec("gpt-oss-20b", change)
    assert err.value.key == key


def test_sinks_are_gqa_only():
    with pytest.raises(SpecError) as err:
        load_spec("deepseek-v3", ["attention.sinks=true"])
    assert err.value.key == "attention.sinks"


def test_false_sinks_read_as_absent():
    spec = load_spec("llama-3.2-1b", ["attention.sinks=false"])
    assert spec.attention.sinks is None
    assert spec_to_hf_config(spec)["model_type"] == "llama"
