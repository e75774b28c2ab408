"""HF config.json interop: import eleven transformers model types, export specs back, round trip.

Test configs come from transformers' own `AutoConfig.for_model(...).to_dict()`; nothing is
downloaded.
"""

import json
import subprocess
import sys

import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec, preset_names
from archscope.spec.families.registry import families
from archscope.spec.fields import to_mapping
from archscope.spec.hf import mapping_from_hf_config, spec_to_hf_config, write_hf_config
from hf_configs import write_config

TINY_LLAMA = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                  num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
                  rms_norm_eps=1e-5)
LLAMA3 = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 8192}


def hf_dict(model_type, **kwargs):
    return AutoConfig.for_model(model_type, **kwargs).to_dict()


def shape(spec, drop=("extends",)):
    return {k: v for k, v in to_mapping(spec).items() if k not in drop}


@pytest.mark.parametrize("name", preset_names())
def test_preset_round_trips_through_transformers(name, tmp_path):
    spec = load_spec(name)
    write_hf_config(spec, tmp_path / "ours")
    AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    assert shape(load_spec(tmp_path / "hf")) == shape(spec)


@pytest.mark.parametrize("name, model_type", [
    ("gpt2", "gpt2"), ("gpt3-175b", "gpt2"), ("llama-3.2-1b", "llama"),
    ("mistral-7b-v0.1", "mistral"), ("mixtral-8x7b", "mixtral"), ("deepseek-v2", "deepseek_v2"),
    ("granite-3.0-2b", "granite"), ("granite-3.0-3b-a800m", "granitemoe"),
    ("qwen3-8b", "qwen3"), ("olmo-2-7b", "olmo2"), ("phi-4", "phi3"),
    ("qwen3-30b-a3b", "qwen3_moe"), ("deepseek-v3", "deepseek_v3"), ("gpt-oss-20b", "gpt_oss")])
def test_export_picks_the_class_from_the_structure(name, model_type):
    if name not in preset_names():
        pytest.skip(f"preset {name} not shipped")
    config = spec_to_hf_config(load_spec(name))
    assert config["model_type"] == model_type
    assert "rope_scaling" not in config and "rope_theta" not in config  # current layout only
    AutoConfig.for_model(**config)  # transformers accepts it


def test_what_hf_cannot_hold_goes_under_the_archscope_key():
    config = spec_to_hf_config(load_spec("gpt3-175b"))
    assert config["n_embd"] == 12288 and config["n_inner"] == 49152
    extra = config["archscope"]
    assert extra["name"] == "gpt3-175b" and "Brown" in extra["source"]
    assert extra["layers"][0]["select"] == "1::2" and "note" in extra["layers"][0]


def test_llama_rope_layouts_give_the_same_spec(tmp_path):
    current = hf_dict("llama", **TINY_LLAMA, rope_parameters={
        "rope_type": "llama3", "rope_theta": 500000.0, **LLAMA3})
    older = {k: v for k, v in current.items() if k != "rope_parameters"}
    older["rope_theta"] = 500000.0
    layouts = {"current": current,
               "type": {**older, "rope_scaling": {"type": "llama3", **LLAMA3}},
               "rope_type": {**older, "rope_scaling": {"rope_type": "llama3", **LLAMA3}}}
    specs = [load_spec(write_config(tmp_path / name, cfg)) for name, cfg in layouts.items()]
    first = shape(specs[0], drop=("name", "source"))
    assert all(shape(s, drop=("name", "source")) == first for s in specs)
    spec = specs[0]
    assert spec.position.theta == 500000.0
    assert to_mapping(spec.position.scaling) == {
        "kind": "llama3", "factor": 8.0, "original_max_seq_len": 8192, "low_freq_factor": 1.0,
        "high_freq_factor": 4.0}
    a = spec.attention
    assert (a.n_heads, a.n_kv_heads, a.head_dim) == (8, 2, 32)
    assert spec.name == "current" and spec.source.startswith("config.json at ")


def test_older_linear_scaling_with_type(tmp_path):
    config = hf_dict("llama", **TINY_LLAMA)
    del config["rope_parameters"]
    config.update(rope_theta=10000.0, rope_scaling={"type": "linear", "factor": 4.0})
    spec = load_spec(write_config(tmp_path / "m", config))
    assert to_mapping(spec.position.scaling) == {"kind": "linear", "factor": 4.0}


DEEPSEEK = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, moe_intermediate_size=64,
                num_hidden_layers=4, num_attention_heads=8, n_routed_experts=16,
                n_shared_experts=2, num_experts_per_tok=4, first_k_dense_replace=1,
                topk_method="group_limited_greedy", n_group=4, topk_group=2,
                routed_scaling_factor=16.0, q_lora_rank=None,
                kv_lora_rank=64, qk_nope_head_dim=32, qk_rope_head_dim=16, v_head_dim=32,
                max_position_embeddings=4096)


def test_deepseek_v2_config(tmp_path):
    spec = load_spec(write_config(tmp_path / "ds", hf_dict("deepseek_v2", **DEEPSEEK)))
    a, f = spec.attention, spec.ffn
    assert (a.kind, a.n_heads, a.q_lora_rank, a.kv_lora_rank) == ("mla", 8, None, 64)
    assert (a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim) == (32, 16, 32)
    assert (f.kind, f.n_experts, f.top_k, f.d_expert, f.n_shared_experts) == ("moe", 16, 4, 64, 2)
    assert to_mapping(f.router) == {"method": "group_limited_greedy", "n_group": 4,
                                    "topk_group": 2, "normalize": False, "scaling_factor": 16.0,
                                    "scoring": "softmax", "correction_bias": False,
                                    "bias": False, "weights": "output"}
    assert to_mapping(spec.layers) == [
        {"select": "0:1", "ffn": {"kind": "swiglu", "d_ff": 512, "activation": "silu"}}]
    assert [layer.ffn.kind for layer in spec.plan] == ["swiglu", "moe", "moe", "moe"]
    config = spec_to_hf_config(spec)
    assert config["model_type"] == "deepseek_v2" and config["first_k_dense_replace"] == 1
    assert config["q_lora_rank"] is None and config["intermediate_size"] == 512
    AutoConfig.for_model(**config)


def test_deepseek_moe_layer_freq_is_honoured_on_import_and_refused_on_export(tmp_path):
    config = hf_dict("deepseek_v2", **{**DEEPSEEK, "num_hidden_layers": 6})
    config["moe_layer_freq"] = 2  # DeepSeek's own key; transformers' class does not read it
    spec = load_spec(write_config(tmp_path / "ds", config))
    assert [layer.is_moe for layer in spec.plan] == [False, False, True, False, True, False]
    with pytest.raises(SpecError) as err:  # transformers' DeepseekV2 ignores moe_layer_freq
        spec_to_hf_config(spec)
    assert err.value.key == "ffn.kind" and "layer 3 would get 'moe'" in str(err.value)


def test_qwen2_qkv_bias_and_sliding_layers(tmp_path):
    config = hf_dict("qwen2", **TINY_LLAMA, use_sliding_window=True, sliding_window=512,
                     max_window_layers=2)
    spec = load_spec(write_config(tmp_path / "q", config))
    assert spec.attention.bias and spec.attention.out_bias is False
    assert not spec.ffn.bias
    assert [layer.window for layer in spec.plan] == [None, None, 512, 512]
    exported = spec_to_hf_config(spec)
    assert exported["model_type"] == "qwen2" and exported["layer_types"] == config["layer_types"]


def test_qwen2_layer_types_are_honoured(tmp_path):
    types = ["sliding_attention", "full_attention"] * 2
    config = hf_dict("qwen2", **TINY_LLAMA, use_sliding_window=True, sliding_window=512,
                     layer_types=types)
    spec = load_spec(write_config(tmp_path / "q", config))
    assert [layer.window for layer in spec.plan] == [512, None, 512, None]
    without = load_spec(write_config(tmp_path / "off", {**config, "use_sliding_window": False}))
    assert all(layer.window is None for layer in without.plan)


@pytest.mark.parametrize("model_type", ["llama", "mistral", "mixtral", "qwen2", "granite",
                                        "granitemoe", "gpt2", "qwen3", "olmo2", "phi3",
                                        "qwen3_moe"])
def test_default_config_of_each_type_imports_and_exports_to_the_same_type(model_type, tmp_path):
    spec = load_spec(write_config(tmp_path / model_type, hf_dict(model_type)))
    assert spec_to_hf_config(spec)["model_type"] == model_type


def test_gpt2_defaults(tmp_path):
    spec = load_spec(write_config(tmp_path / "g", hf_dict("gpt2")))
    assert (spec.ffn.kind, spec.ffn.d_ff, spec.ffn.activation) == ("mlp", 3072, "gelu_tanh")
    assert spec.position.kind == "learned" and spec.norm.kind == "layernorm"
    assert spec.attention.bias and spec.attention.has_out_bias and spec.ffn.bias


def test_missing_keys_take_transformers_defaults(tmp_path):
    sparse = load_spec(write_config(tmp_path / "sparse", {"model_type": "mistral"}))
    full = load_spec(write_config(tmp_path / "full", hf_dict("mistral")))
    assert shape(sparse, drop=("name", "source")) == shape(full, drop=("name", "source"))
    assert sparse.attention.window == 4096


def test_missing_key_without_a_default_is_named(tmp_path):
    # num_experts_per_tok defaults to None
    folder = write_config(tmp_path / "ds", hf_dict("deepseek_v2"))
    with pytest.raises(SpecError, match="num_experts_per_tok") as err:
        load_spec(folder)
    assert str(folder / "config.json") in str(err.value)


def test_complete_config_loads_without_torch(tmp_path):
    write_hf_config(load_spec("llama-3.2-1b"), tmp_path)
    code = ("import sys; from archscope.spec import load_spec; load_spec(sys.argv[1]); "
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True)


@pytest.mark.parametrize("config", [{"model_type": "bert"}, {"hidden_size": 8}])
def test_unsupported_model_type_points_at_the_list(config, tmp_path):
    folder = write_config(tmp_path / "m", config)
    with pytest.raises(SpecError) as err:
        mapping_from_hf_config(folder)
    message = str(err.value)
    assert str(folder / "config.json") in message and "model_type" in message
    # too many to list in one message: how many, the roots others are declared from first,
    # and the command that lists them all
    read = [f for f in families().values() if not f.reads_nothing]
    assert f"archscope reads {len(read)} model types: " in message
    assert all(f" {root}," in message for root in ("gpt2", "llama"))
    assert "`archscope families`" in message


def test_a_misspelt_model_type_gets_a_did_you_mean(tmp_path):
    with pytest.raises(SpecError, match="did you mean 'llama'"):
        mapping_from_hf_config(write_config(tmp_path / "m", {"model_type": "lama"}))


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", ""])
def test_bad_json_names_the_file(text, tmp_path):
    file = tmp_path / "config.json"
    file.write_text(text)
    with pytest.raises(SpecError) as err:
        load_spec(file)
    assert str(file) in str(err.value)


def test_folder_without_config_json(tmp_path):
    with pytest.raises(SpecError, match="config.json"):
        load_spec(tmp_path)


@pytest.mark.parametrize("preset, change, key", [
    ("llama-3.2-1b", ["norm.position=post"], "norm.position"),
    ("gpt2", ["attention.n_kv_heads=4"], "attention.n_kv_heads"),
    ("llama-3.2-1b", ["position.kind=none", "position.theta=", "position.scaling="],
     "position.kind"),
])
def test_spec_the_hf_class_cannot_express_names_the_key(preset, change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec(preset, change))
    assert err.value.key == key


def test_a_what_if_with_qkv_bias_exports_as_qwen2_and_round_trips(tmp_path):
    spec = load_spec("mistral-7b-v0.1", ["attention.bias=true", "attention.out_bias=false"])
    write_hf_config(spec, tmp_path / "ours")
    config = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert config["model_type"] == "qwen2" and config["use_sliding_window"]
    AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    assert shape(load_spec(tmp_path / "hf")) == shape(spec)


def test_llama_with_mla_exports_as_all_dense_deepseek_v2(tmp_path):
    mla = ["attention.kind=mla", "attention.n_kv_heads=", "attention.head_dim=",
           "attention.kv_lora_rank=512", "attention.qk_nope_head_dim=64",
           "attention.qk_rope_head_dim=32", "attention.v_head_dim=64"]
    spec = load_spec("llama-3.2-1b", mla)
    write_hf_config(spec, tmp_path / "ours")
    config = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert config["model_type"] == "deepseek_v2"
    assert config["first_k_dense_replace"] == spec.n_layers  # every layer a dense SwiGLU
    AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    assert shape(load_spec(tmp_path / "hf")) == shape(spec)


# deepseek-ai/DeepSeek-V2-Lite config.json (older layout: rope_theta + rope_scaling with `type`,
# DeepSeek's own keys such as moe_layer_freq and scoring_func), copied as published.
DEEPSEEK_V2_LITE = {
    "architectures": ["DeepseekV2ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
    "aux_loss_alpha": 0.001, "bos_token_id": 100000, "eos_token_id": 100001,
    "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048,
    "initializer_range": 0.02, "intermediate_size": 10944, "kv_lora_rank": 512,
    "max_position_embeddings": 163840, "model_type": "deepseek_v2", "moe_intermediate_size": 1408,
    "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
    "norm_topk_prob": False, "num_attention_heads": 16, "num_experts_per_tok": 6,
    "num_hidden_layers": 27, "num_key_value_heads": 16, "pretraining_tp": 1, "q_lora_rank": None,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                     "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax", "seq_aux": True,
    "tie_word_embeddings": False, "topk_group": 1, "topk_method": "greedy",
    "torch_dtype": "bfloat16", "transformers_version": "4.33.1", "use_cache": True,
    "v_head_dim": 128, "vocab_size": 102400}


def test_published_deepseek_v2_lite_config_gives_the_preset(tmp_path):
    if "deepseek-v2-lite" not in preset_names():
        pytest.skip("preset deepseek-v2-lite not shipped")
    spec = load_spec(write_config(tmp_path / "DeepSeek-V2-Lite", DEEPSEEK_V2_LITE))
    preset = load_spec("deepseek-v2-lite")
    assert shape(spec, drop=("name", "source")) == shape(preset, drop=("extends", "name", "source"))


def test_deepseek_export_refuses_renormalised_routing():
    """transformers' DeepseekV2 ignores norm_topk_prob: its writer refuses normalize: true,
    which would silently build a model that routes differently (found by a logit mismatch in
    the profile tests); the exporter writes such a spec as Mistral 4, whose class honours it
    (tests/nn/test_mistral4.py compares the logits)."""
    from archscope.spec import load_spec
    from archscope.spec.families.registry import find

    spec = load_spec("deepseek-v2-lite", ["ffn.router.normalize=true"])
    with pytest.raises(SpecError, match="never renormalises") as info:
        find("deepseek_v2").write(spec)
    assert info.value.key == "ffn.router.normalize"
    written = spec_to_hf_config(spec)
    assert written["model_type"] == "mistral4" and written["norm_topk_prob"] is True
