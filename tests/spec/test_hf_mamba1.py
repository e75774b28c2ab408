"""HF config.json interop for the Mamba-1 families (mamba, falcon_mamba, jamba): the facts the
presets cite import to the presets, the presets export as their own class and read back, and
what transformers or archscope cannot build is refused naming the key."""

import pytest

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.spec.resolved import differences
from hf_configs import write_config

# the config.json facts each preset's header cites
PUBLISHED = {
    "mamba-2.8b": {"model_type": "mamba", "architectures": ["MambaForCausalLM"],
                   "hidden_size": 2560, "num_hidden_layers": 64, "vocab_size": 50280,
                   "state_size": 16, "expand": 2, "intermediate_size": 5120,
                   "conv_kernel": 4, "time_step_rank": 160, "use_bias": False,
                   "use_conv_bias": True, "hidden_act": "silu", "layer_norm_epsilon": 1e-05,
                   "residual_in_fp32": True},
    "falcon-mamba-7b": {"model_type": "falcon_mamba",
                        "architectures": ["FalconMambaForCausalLM"], "hidden_size": 4096,
                        "num_hidden_layers": 64, "vocab_size": 65024, "expand": 16,
                        "intermediate_size": 8192, "state_size": 16, "conv_kernel": 4,
                        "time_step_rank": 256, "use_bias": False, "use_conv_bias": True,
                        "hidden_act": "silu", "layer_norm_epsilon": 1e-05,
                        "mixer_rms_eps": 1e-06, "tie_word_embeddings": False},
    "jamba-mini-1.7": {"model_type": "jamba", "architectures": ["JambaForCausalLM"],
                       "hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 65536,
                       "max_position_embeddings": 262144, "num_attention_heads": 32,
                       "num_key_value_heads": 8, "intermediate_size": 14336,
                       "hidden_act": "silu", "num_experts": 16, "num_experts_per_tok": 2,
                       "expert_layer_period": 2, "expert_layer_offset": 1,
                       "attn_layer_period": 8, "attn_layer_offset": 4, "mamba_d_state": 16,
                       "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256,
                       "mamba_conv_bias": True, "mamba_proj_bias": False,
                       "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
                       "sliding_window": None, "use_mamba_kernels": True},
}
# what the Mamba configs do not say: archscope's context (see families/mamba.py)
CONTEXT = {"mamba-2.8b": 2048, "falcon-mamba-7b": 8192}


@pytest.mark.parametrize("name", PUBLISHED)
def test_the_published_config_is_the_preset(name, tmp_path):
    raw = dict(PUBLISHED[name])
    if name in CONTEXT:
        raw["max_position_embeddings"] = CONTEXT[name]
    read = load_spec(write_config(tmp_path / name, raw))
    assert list(differences(read, load_spec(name))) == []


@pytest.mark.parametrize("name", PUBLISHED)
def test_the_preset_exports_as_its_own_class(name, tmp_path):
    config = spec_to_hf_config(load_spec(name))
    assert config["model_type"] == PUBLISHED[name]["model_type"]
    assert list(differences(load_spec(write_config(tmp_path / "back", config)),
                            load_spec(name))) == []


@pytest.mark.parametrize("model_type,changes,key", [
    ("mamba", {"hidden_act": "gelu"}, "hidden_act"),
    ("falcon_mamba", {"mixer_rms_eps": 0}, "mixer_rms_eps"),
    ("jamba", {"attn_layer_offset": 8}, "attn_layer_offset"),
    ("jamba", {"expert_layer_offset": 2}, "expert_layer_offset"),
    ("jamba", {"hidden_act": "gelu"}, "hidden_act"),
    ("jamba", {"num_experts_per_tok": 17}, "num_experts_per_tok"),
])
def test_what_transformers_refuses_or_archscope_cannot_build_is_named(model_type, changes,
                                                                      key, tmp_path):
    name = next(n for n, raw in PUBLISHED.items() if raw["model_type"] == model_type)
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "bad", {**PUBLISHED[name], **changes}))
    assert err.value.key == key


def test_a_jamba_layout_no_period_places_is_refused_on_export():
    spec = load_spec("jamba-mini-1.7")
    moved = spec.replace(layers=(*spec.layers[:0], *(
        o if o.mixer != "attention" else type(o)(select=(4, 12, 21, 28), mixer="attention")
        for o in spec.layers)))
    with pytest.raises(SpecError, match="attn_layer_period"):
        spec_to_hf_config(moved)
