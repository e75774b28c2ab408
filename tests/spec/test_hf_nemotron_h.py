"""HF config.json interop for nemotron_h: the 8B's published keys import to the preset (the
hybrid_override_pattern form; the layers_block_type form transformers 5 saves is read in the
round trip of every preset, test_hf.py's), the presets export to nemotron_h, and what NemotronH
(or the spec) cannot hold is refused, naming the key.
"""

import pytest

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from hf_configs import network, write_config

PATTERN = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-"
# nvidia/Nemotron-H-8B-Base-8K config.json (source in the preset's header), as published: it
# says attention_head_dim (read by no 5.23 module; head_dim defaults to the same 128) and keys
# that no module reads (rms_norm_eps, expand, residual_in_fp32, ...)
PUBLISHED = {
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h",
    "attention_bias": False, "attention_head_dim": 128, "chunk_size": 128, "conv_kernel": 4,
    "expand": 2, "hidden_act": "relu2", "hidden_size": 4096, "hybrid_override_pattern": PATTERN,
    "intermediate_size": 21504, "layer_norm_epsilon": 1e-05, "mamba_head_dim": 64,
    "mamba_hidden_act": "silu", "mamba_num_heads": 128, "mamba_proj_bias": False,
    "max_position_embeddings": 8192, "mlp_bias": False, "mlp_hidden_act": "relu2",
    "n_groups": 8, "num_attention_heads": 32, "num_hidden_layers": 52, "num_key_value_heads": 8,
    "rescale_prenorm_residual": True, "residual_in_fp32": False, "rms_norm_eps": 1e-05,
    "ssm_state_size": 128, "tie_word_embeddings": False, "use_bias": False,
    "use_conv_bias": True, "vocab_size": 131072, "time_step_min": 0.001}


@pytest.mark.filterwarnings("ignore:.*has no head_dim")
def test_published_config_gives_the_preset(tmp_path):
    spec = load_spec(write_config(tmp_path / "nh", PUBLISHED))
    assert network(spec) == network(load_spec("nemotron-h-8b"))
    assert spec.n_layers == 52 and [layer.layer_type for layer in spec.plan].count("mlp") == 24


@pytest.mark.parametrize("name", ["nemotron-h-4b", "nemotron-h-8b", "nemotron-nano-9b-v2"])
def test_presets_export_to_nemotron_h(name):
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec(name)
    config = spec_to_hf_config(spec)
    assert (config["model_type"], config["architectures"]) == ("nemotron_h",
                                                               ["NemotronHForCausalLM"])
    assert len(config["hybrid_override_pattern"]) == spec.n_layers


def test_legacy_mamba_key_names_are_read(tmp_path):
    """NemotronHConfig still takes the older mamba_* names of four keys."""
    old = {k: v for k, v in PUBLISHED.items() if k not in ("n_groups", "conv_kernel",
                                                          "chunk_size", "time_step_min")}
    old.update(mamba_n_groups=8, mamba_d_conv=4, mamba_chunk_size=128, mamba_dt_min=0.001)
    with pytest.warns(UserWarning, match="no head_dim"):
        spec = load_spec(write_config(tmp_path / "old", old))
    assert spec.mixer == load_spec("nemotron-h-8b").mixer


def _tiny(**changes):
    return {**PUBLISHED, "hybrid_override_pattern": "M-*-", "hidden_size": 64,
            "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
            "intermediate_size": 96, "mamba_num_heads": 4, "mamba_head_dim": 16, "n_groups": 2,
            "ssm_state_size": 8, "vocab_size": 512, **changes}


def test_a_config_without_mamba_layers_has_no_mixer(tmp_path):
    spec = load_spec(write_config(tmp_path / "a", _tiny(hybrid_override_pattern="*-*-")))
    assert spec.mixer is None
    assert [layer.layer_type for layer in spec.plan] == ["full_attention", "mlp"] * 2


@pytest.mark.parametrize("change, key, words", [
    (dict(hybrid_override_pattern="M-E-"), "hybrid_override_pattern", "MoE"),
    (dict(hybrid_override_pattern="M-x-"), "hybrid_override_pattern[2]", "M, *, - or E"),
    (dict(hybrid_override_pattern=""), "hybrid_override_pattern", "positive"),
    (dict(hybrid_override_pattern=None), "hybrid_override_pattern", "required"),
    (dict(layers_block_type=["mlp", "mamba"]), "layers_block_type", "linear_attention"),
    (dict(tie_word_embeddings=True), "tie_word_embeddings", "never ties"),
    (dict(num_nextn_predict_layers=1), "num_nextn_predict_layers", "MTP"),
    (dict(mlp_hidden_act="swiglu"), "mlp_hidden_act", "relu2"),
    (dict(mamba_hidden_act="gelu"), "mamba_hidden_act", "silu"),
    (dict(num_key_value_heads=3), "num_key_value_heads", "multiple"),
    (dict(n_groups=3), "n_groups", "multiple of n_groups"),
    (dict(time_step_min=-0.1), "time_step_min", ">= 0"),
    (dict(n_groups=8, mamba_n_groups=4), "n_groups", "disagrees"),
])
def test_refused_naming_the_key(change, key, words, tmp_path):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "bad", _tiny(**change)))
    assert err.value.key == key and words in err.value.detail


def test_another_mlp_activation_reads_as_the_mlp_kind(tmp_path):
    spec = load_spec(write_config(tmp_path / "g", _tiny(mlp_hidden_act="gelu")))
    assert (spec.ffn.kind, spec.ffn.activation) == ("mlp", "gelu")
    assert spec_to_hf_config(spec)["mlp_hidden_act"] == "gelu"


@pytest.mark.parametrize("sets, key", [
    (["ffn.kind=mlp", "ffn.activation=gelu",
      "layers=[{select: [0], ffn: none}, {select: [1], mixer: none}]"],
     "layers"),  # layers 2.. a Mamba mixer and an MLP: two blocks in one
    (["tie_embeddings=true"], "tie_embeddings"),
    (["ffn=", "ffn.kind=swiglu", "ffn.d_ff=64"], "ffn.kind"),
    (["position=", "position.kind=rope", "position.theta=10000"], "position.kind"),
    (["attention.bias=true"], "attention.bias"),
    (["mixer.dt_limit_max=0.5"], "mixer.dt_limit_max"),
    (["mixer.norm_before_gate=true"], "mixer.norm_before_gate"),
    (["norm.kind=layernorm"], "norm.kind"),
])
def test_export_refuses_what_nemotron_h_cannot_build(sets, key):
    spec = load_spec("nemotron-h-4b", sets)
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(spec)
    assert err.value.key == key, err.value


def test_relu2_beside_a_mixer_is_still_refused():
    """A squared-ReLU MLP after attention in the same layer has no transformers class."""
    spec = load_spec("nemotron-h-4b", ["layers=[{select: [0], ffn: none}]"])
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(spec)
    assert err.value.key == "ffn.kind" and "relu2" in err.value.detail
