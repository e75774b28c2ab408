"""HF config.json interop for Granite 4.0 (granitemoehybrid): the published configs' facts import
to the presets (IBM's "mamba"/"attention" layer types, transformers 5's spelling and the
layers_block_type alias alike), the hybrid presets export as granitemoehybrid and read back,
what the class or archscope cannot hold is refused naming the key, and `archscope generate` runs
on a checkpoint archscope writes.
"""

import pytest
import torch

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config, write_hf_config
from archscope.spec.resolved import differences
from hf_configs import write_config
from hybrid_specs import tiny_granite


def granite(**changes):
    """The parity tests' tiny MoE hybrid at 4 layers: Mamba-2 layers 0, 2, 3 and a NoPE
    attention layer 1."""
    return tiny_granite(**{"n_layers": 4, "layers": [dict(select=[1], mixer="attention")],
                           **changes})

ATTENTION_AT = (5, 15, 25, 35)
TYPES = ["attention" if i in ATTENTION_AT else "mamba" for i in range(40)]
COMMON = {"architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid",
          "vocab_size": 100352, "num_hidden_layers": 40, "max_position_embeddings": 131072,
          "rms_norm_eps": 1e-05, "tie_word_embeddings": True, "attention_bias": False,
          "hidden_act": "silu", "embedding_multiplier": 12, "residual_multiplier": 0.22,
          "mamba_chunk_size": 256, "mamba_conv_bias": True, "mamba_d_conv": 4,
          "mamba_expand": 2, "mamba_n_groups": 1, "mamba_proj_bias": False,
          "rope_theta": 10000, "rope_scaling": None, "bos_token_id": 100257,
          "eos_token_id": 100257, "pad_token_id": 100256}
# the facts the presets' headers cite, as the config.json keys carry them
PUBLISHED = {
    "granite-4.0-h-tiny": {
        **COMMON, "hidden_size": 1536, "num_attention_heads": 12, "num_key_value_heads": 4,
        "intermediate_size": 512, "shared_intermediate_size": 1024, "num_local_experts": 64,
        "num_experts_per_tok": 6, "attention_multiplier": 0.0078125, "logits_scaling": 6,
        "layer_types": TYPES, "position_embedding_type": "nope", "mamba_n_heads": 48,
        "mamba_d_head": 64, "mamba_d_state": 128},
    "granite-4.0-h-micro": {
        **COMMON, "hidden_size": 2048, "num_attention_heads": 32, "num_key_value_heads": 8,
        "intermediate_size": 8192, "shared_intermediate_size": 8192, "num_local_experts": 0,
        "num_experts_per_tok": 0, "attention_multiplier": 0.015625, "logits_scaling": 8,
        "layer_types": TYPES, "position_embedding_type": "nope", "mamba_n_heads": 64,
        "mamba_d_head": 64, "mamba_d_state": 128},
    "granite-4.0-micro": {
        **COMMON, "hidden_size": 2560, "num_attention_heads": 40, "num_key_value_heads": 8,
        "intermediate_size": 8192, "shared_intermediate_size": 8192, "num_local_experts": 0,
        "num_experts_per_tok": 0, "attention_multiplier": 0.015625, "logits_scaling": 10,
        "layer_types": ["attention"] * 40, "position_embedding_type": "rope",
        "rope_theta": 10000000, "mamba_n_heads": 128, "mamba_d_head": 40, "mamba_d_state": 256},
}
TINY = {**PUBLISHED["granite-4.0-h-tiny"], "num_hidden_layers": 4,
        "layer_types": ["mamba", "attention", "mamba", "mamba"]}


@pytest.mark.parametrize("preset", PUBLISHED)
def test_published_configs_give_the_presets(preset, tmp_path):
    spec = load_spec(write_config(tmp_path / "g", PUBLISHED[preset]))
    assert list(differences(spec, load_spec(preset))) == []
    assert [layer.index for layer in spec.plan if layer.attention] == \
        (list(ATTENTION_AT) if "-h-" in preset else list(range(40)))


def test_layer_type_spellings_and_the_alias_read_alike(tmp_path):
    ibm = load_spec(write_config(tmp_path / "a", TINY))
    current = {**TINY, "layer_types": ["linear_attention", "full_attention",
                                       "linear_attention", "linear_attention"]}
    alias = {k: v for k, v in TINY.items() if k != "layer_types"}
    alias["layers_block_type"] = TINY["layer_types"]
    for i, raw in enumerate((current, alias)):
        assert list(differences(load_spec(write_config(tmp_path / str(i), raw)), ibm)) == []
    absent = {k: v for k, v in TINY.items() if k != "layer_types"}  # the class: all Mamba
    spec = load_spec(write_config(tmp_path / "c", absent))
    assert all(layer.state is not None for layer in spec.plan)


@pytest.mark.parametrize("preset", ["granite-4.0-h-tiny", "granite-4.0-h-micro"])
def test_presets_export_as_granitemoehybrid_and_read_back(preset, tmp_path):
    """(Its round trip through transformers is test_hf.py's, for every preset.)"""
    spec = load_spec(preset)
    config = spec_to_hf_config(spec)
    assert config["model_type"] == "granitemoehybrid"
    assert config["layer_types"] == TYPES and config["position_embedding_type"] == "nope"
    write_hf_config(spec, tmp_path / "ours")
    assert load_spec(tmp_path / "ours") == spec


def test_the_attention_only_member_round_trips_as_granite(tmp_path):
    spec = load_spec("granite-4.0-micro")
    assert spec_to_hf_config(spec)["model_type"] == "granite"
    write_hf_config(spec, tmp_path / "ours")
    assert load_spec(tmp_path / "ours") == spec


@pytest.mark.parametrize("change, key", [
    ({"layer_types": ["mamba"] * 3}, "layer_types"),
    ({"layer_types": ["mamba", "sliding_attention", "mamba", "mamba"]}, "layer_types[1]"),
    ({"mamba_d_head": 48}, "mamba_d_head"),
    ({"mamba_n_heads": 7, "mamba_d_head": "auto"}, "mamba_n_heads"),
    ({"position_embedding_type": "alibi"}, "position_embedding_type"),
    ({"hidden_act": "gelu"}, "hidden_act"),
    ({"num_experts_per_tok": 65}, "num_experts_per_tok"),
    ({"time_step_limit": None}, "time_step_limit"),
    ({"time_step_limit": [0.0, -1.0]}, "time_step_limit[1]"),
    ({"shared_intermediate_size": 0}, "shared_intermediate_size"),
    ({"mamba_n_groups": 5}, "mamba_n_groups"),  # 48 heads in 5 groups: the spec's own check
])
def test_bad_keys_are_named(tmp_path, change, key):
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "g", {**TINY, **change}))
    assert err.value.key == key


@pytest.mark.parametrize("change, key", [
    (dict(ffn={"kind": "moe", "n_experts": 4, "top_k": 2, "d_expert": 16}), "ffn.n_shared_experts"),
    (dict(ffn={"kind": "moe", "n_experts": 4, "top_k": 2, "d_expert": 16,
               "n_shared_experts": 2}), "ffn.n_shared_experts"),
    (dict(mixer={"kind": "mamba2", "n_heads": 6, "head_dim": 8, "d_state": 8}), "mixer.head_dim"),
    (dict(ffn={"kind": "swiglu", "d_ff": 40, "activation": "gelu"}), "ffn.activation"),
])
def test_export_refuses_what_the_class_cannot_build(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(granite(**change))
    assert err.value.key == key


def test_generate_runs_on_a_checkpoint_archscope_writes(tmp_path, run_cli):
    """`archscope generate` on the tiny MoE hybrid written as a checkpoint (that transformers
    loads it, and that its save_pretrained loads here, are the conformance cases')."""
    from archscope.weights.writer import write_checkpoint

    spec = granite(vocab_size=300)  # make-checkpoint's byte-level tokenizer needs 262 ids
    write_checkpoint(spec, tmp_path / "ours", dtype=torch.float32)
    code, _, err = run_cli("generate", "--weights", str(tmp_path / "ours"), "--device", "cpu",
                           "--new-tokens", "4", "Hello")
    assert code == 0, err
    assert "4 new" in err
