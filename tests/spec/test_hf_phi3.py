"""HF config.json interop for phi3: Phi-4's published config.json imports to the phi-4 preset
(both copies: sliding_window null or 16384, the same network at its context), transformers'
own Phi3 config imports with both fusions, a spec round-trips through config.json to the same
transformers network, phi3 is written only when the fusion fields say so, longrope and partial
RoPE read as Phi3Config reads them (its older spellings too), and what Phi3Config refuses or
archscope does not read is refused naming the key.
"""

import json

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from archscope.errors import SpecError
from archscope.estimate import count_params, kv_cache_bytes, prefill_flops
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config, write_hf_config
from hf_configs import network, write_config

# microsoft/phi-4 config.json as published (sources in model_specs/phi-4.yaml)
PHI4 = {"architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "vocab_size": 100352,
        "hidden_size": 5120, "intermediate_size": 17920, "num_hidden_layers": 40,
        "num_attention_heads": 40, "num_key_value_heads": 10, "max_position_embeddings": 16384,
        "original_max_position_embeddings": 16384, "rms_norm_eps": 1e-05, "rope_theta": 250000,
        "rope_scaling": None, "tie_word_embeddings": False, "attention_bias": False,
        "attention_dropout": 0.0, "embd_pdrop": 0.0, "resid_pdrop": 0.0, "hidden_act": "silu",
        "sliding_window": None, "bos_token_id": 100257, "eos_token_id": 100257,
        "pad_token_id": 100257, "torch_dtype": "bfloat16", "transformers_version": "4.47.0"}
TINY = dict(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
            num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=4096,
            pad_token_id=None)


def test_published_config_gives_the_preset(tmp_path):
    assert network(load_spec(write_config(tmp_path / "phi4", PHI4))) == network(load_spec("phi-4"))


def test_the_other_copy_with_window_16384_is_the_same_network_at_its_context(tmp_path):
    """sliding_window 16384 at max_position_embeddings 16384 masks no key: every estimate at
    the full context equals the preset's (which says null)."""
    windowed = load_spec(write_config(tmp_path / "phi4", {**PHI4, "sliding_window": 16384}))
    assert windowed.attention.window == 16384
    preset, n = load_spec("phi-4"), 16384
    for estimate in (lambda s: count_params(s).total, lambda s: kv_cache_bytes(s, n, 1, "bf16"),
                     lambda s: prefill_flops(s, n).total):
        assert estimate(windowed) == estimate(preset)


def test_transformers_config_imports_with_both_fusions(tmp_path):
    spec = load_spec(write_config(tmp_path / "p", AutoConfig.for_model("phi3", **TINY).to_dict()))
    assert (spec.attention.fused_qkv, spec.ffn.fused_gate_up) == (True, True)
    assert (spec.attention.head_dim, spec.attention.window, spec.attention.bias) == (32, None,
                                                                                   False)


def _hf_shapes(config: dict) -> dict:
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config))
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


@pytest.mark.parametrize("changes", [[], ["attention.window=2047", "max_seq_len=4096"]])
def test_round_trip_builds_the_same_transformers_network(changes, tmp_path):
    """config.json -> spec -> config.json -> transformers: the same tensors, the same spec."""
    first = load_spec(write_config(tmp_path / "in", PHI4), [*changes, "n_layers=2"])
    write_hf_config(first, tmp_path / "ours")
    written = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert written["model_type"] == "phi3" and written["sliding_window"] == first.attention.window
    AutoConfig.from_pretrained(tmp_path / "ours").save_pretrained(tmp_path / "hf")
    again = load_spec(tmp_path / "hf")
    assert network(again) == network(first)
    theirs = {**PHI4, "num_hidden_layers": 2, "pad_token_id": None, "rope_scaling": None,
              "sliding_window": first.attention.window,
              "max_position_embeddings": first.max_seq_len}
    assert _hf_shapes(spec_to_hf_config(again)) == _hf_shapes(theirs)


def test_a_llama_with_both_fusions_exports_as_phi3_and_only_then():
    llama = load_spec("llama-3.2-1b", ["position.scaling=", "tie_embeddings=false"])
    assert spec_to_hf_config(llama)["model_type"] == "llama"
    fused = load_spec("llama-3.2-1b", ["position.scaling=", "tie_embeddings=false",
                                       "attention.fused_qkv=true", "ffn.fused_gate_up=true"])
    assert spec_to_hf_config(fused)["model_type"] == "phi3"
    assert count_params(fused).total == count_params(llama).total  # a fusion changes no count


@pytest.mark.parametrize("change, key", [
    (["ffn.fused_gate_up=false"], "ffn.fused_gate_up"),  # Phi3 fuses both or it is not Phi3
    (["attention.fused_qkv=false"], "attention.fused_qkv"),
    (["attention.bias=true"], "attention.bias"),  # Phi3's projections have no bias
])
def test_a_mix_no_class_has_names_the_key(change, key):
    with pytest.raises(SpecError) as err:
        spec_to_hf_config(load_spec("phi-4", change))
    assert err.value.key == key


def test_false_and_absent_are_one_spelling():
    spec = load_spec("phi-4", ["attention.fused_qkv=false", "ffn.fused_gate_up=false"])
    assert (spec.attention.fused_qkv, spec.ffn.fused_gate_up) == (None, None)
    assert spec_to_hf_config(spec)["model_type"] == "llama"


@pytest.mark.parametrize("change, key, message", [
    (["ffn.kind=mlp", "ffn.activation=gelu"], "ffn.fused_gate_up", "only applies to the gated"),
    (["attention.kind=mla", "attention.n_kv_heads=", "attention.head_dim=",
      "attention.kv_lora_rank=64", "attention.qk_nope_head_dim=32",
      "attention.qk_rope_head_dim=16", "attention.v_head_dim=32"], "attention.fused_qkv",
     "only applies when kind is 'gqa'"),
])
def test_fusions_are_for_their_kinds_only(change, key, message):
    with pytest.raises(SpecError, match=message) as err:
        load_spec("phi-4", change)
    assert err.value.key == key


def _longrope(**changes) -> dict:
    """Phi-4's config with Phi-3.5-mini's spelling of LongRoPE (rope_scaling, the original
    context at the top level) over 3/4 of each 128-dim head: 48 pairs."""
    scaling = {"type": "longrope", "short_factor": [1.0 + i / 10 for i in range(48)],
               "long_factor": [2.0 + i for i in range(48)]}
    return {**PHI4, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
            "partial_rotary_factor": 0.75, "rope_scaling": scaling, **changes}


@pytest.mark.parametrize("kind", ["su", "longrope", "yarn"])
def test_longrope_and_partial_rotation_read_as_phi3config_reads_them(kind, tmp_path):
    """su, yarn and longrope are longrope; the original context is the top level's, but for su
    the dict's (Phi3Config copies the top level's over the dict's before it renames su); the
    factor is max_position_embeddings / that when the dict has none; partial_rotary_factor is
    read from the top level: each as transformers' own Phi3Config standardises the same file."""
    raw = _longrope(rope_scaling={**_longrope()["rope_scaling"], "type": kind,
                                  "original_max_position_embeddings": 2048})
    spec = load_spec(write_config(tmp_path / "p", raw))
    theirs = AutoConfig.from_pretrained(tmp_path / "p").rope_parameters
    s = spec.position.scaling
    assert (s.kind, s.original_max_seq_len) == (theirs["rope_type"],
                                                theirs["original_max_position_embeddings"])
    assert s.original_max_seq_len == (2048 if kind == "su" else 4096)
    assert s.factor == raw["max_position_embeddings"] / s.original_max_seq_len
    assert spec.attention.rotary_fraction == theirs["partial_rotary_factor"] == 0.75
    assert list(s.short_factor) == theirs["short_factor"] and s.attention_factor is None


@pytest.mark.parametrize("change, key", [
    ({"type": "dynamic", "factor": 2.0}, "rope_scaling.type"),  # Phi3Config: longrope only
    ({"short_factor": [1.0] * 64}, "rope_scaling.short_factor"),  # 48 pairs, not 64
    ({"long_factor": None}, "rope_scaling.long_factor"),
    ({"long_factor": [1.0] * 47 + ["x"]}, "rope_scaling.long_factor[47]"),
    ({"long_factor": [1.0] * 47 + [0.0]}, "rope_scaling.long_factor[47]"),
    ({"mscale": 1.2}, "rope_scaling.mscale"),  # Phi-3-small's key: no Phi3 reads it
    ({"type": "su"}, "rope_scaling.original_max_position_embeddings"),  # su: the dict's
])
def test_a_longrope_phi3config_refuses_or_archscope_cannot_read_names_the_key(change, key,
                                                                              tmp_path):
    raw = _longrope()
    raw["rope_scaling"] = {k: v for k, v in {**raw["rope_scaling"], **change}.items()
                           if v is not None}
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "p", raw))
    assert err.value.key == key


def test_longrope_with_head_dim_apart_from_the_width_is_refused(tmp_path):
    """Phi3Config checks the factors' length against hidden_size // num_attention_heads, its
    rotary embedding uses head_dim: only where they agree does transformers run it."""
    raw = _longrope(head_dim=64, partial_rotary_factor=1.5 * 0.5)  # 48 rotated dims: 24 pairs
    raw["rope_scaling"] = {**raw["rope_scaling"], "short_factor": [1.0] * 24,
                           "long_factor": [1.0] * 24}
    with pytest.raises(SpecError) as err:
        load_spec(write_config(tmp_path / "p", raw))
    assert err.value.key == "head_dim"
