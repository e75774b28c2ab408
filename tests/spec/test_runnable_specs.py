"""Specs that validated but could not run (issue 35): an odd head_dim under RoPE, numbers of
absurd magnitude, YAML 1.1's base-60 and leading-zero octal integers, an empty `select`, a
Nemotron-H pattern that disagrees with num_hidden_layers and an unused window of 10**12, a
DeepSeek config whose width the heads do not divide. Each is refused naming the file and key
(or, where transformers' own class takes it, accepted and built)."""

from __future__ import annotations

import dataclasses
import json
import typing

import pytest
import torch

from archscope.nn.build import build_model
from archscope.spec import ModelSpec, load_spec, preset_names
from archscope.spec import limits
from archscope.spec.fields import to_mapping
from hostile import refused
from spec.test_hf_deepseek_v3 import PUBLISHED as DEEPSEEK_V3
from spec.test_hostile_specs import GOOD, spec_file

# DeepSeek-V3's published config, shrunk to run on a CPU
DEEPSEEK_V3_TINY = dict(vocab_size=1000, intermediate_size=512, num_hidden_layers=4,
                        num_attention_heads=8, num_key_value_heads=8, q_lora_rank=64,
                        kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
                        v_head_dim=16, n_routed_experts=16, num_experts_per_tok=4,
                        moe_intermediate_size=64, n_group=4, topk_group=2,
                        first_k_dense_replace=1, max_position_embeddings=4096)

# --- RoPE needs an even head ---------------------------------------------------------------

def test_an_odd_head_dim_under_rope_is_refused(tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD.replace("head_dim: 16", "head_dim: 63"))
    refused(run_cli, "show", path, words=(path, "attention.head_dim", "even", "63"))
    refused(run_cli, "make-checkpoint", path, "--weights", tmp_path / "ckpt",
            words=("attention.head_dim",))
    assert not (tmp_path / "ckpt").exists()


def test_an_odd_head_dim_in_a_layer_override_names_the_layers(run_cli):
    refused(run_cli, "show", "llama-3.2-1b", "--set",
            "layers=[{select: '0', attention: {head_dim: 63}}]", words=("overrides: layers",))


@pytest.mark.parametrize("overrides", [
    ["attention.rope=false", "layers=[{select: '0', note: all NoPE}]"],  # no layer rotates
    ["attention.head_dim=64", "attention.rotary_fraction=0.5"],  # 32 rotated dims
])
def test_heads_that_rope_does_not_rotate_whole_still_load_and_run(overrides):
    """The check is on the rotated dims: a NoPE model may have an odd head, and partial RoPE
    only needs its rotated part even."""
    base = ["n_layers=1", "d_model=64", "vocab_size=128", "ffn.d_ff=64",
            "attention.n_heads=2", "attention.n_kv_heads=1"]
    odd = ["attention.head_dim=63"] if "attention.rope=false" in overrides else []
    spec = load_spec("llama-3.2-1b", base + odd + overrides)
    model = build_model(spec, "cpu", torch.float32, 0)
    logits = model(torch.zeros(1, 3, dtype=torch.long))
    assert logits.shape == (1, 3, 128) and bool(torch.isfinite(logits).all())


# --- numbers of absurd magnitude -----------------------------------------------------------

@pytest.mark.parametrize("model, key, value, words", [
    ("llama-3.2-1b", "position.theta", "1e300", "beyond the limit 1e+12"),
    ("llama-3.2-1b", "position.theta", "1e-300", "below the limit 1"),
    ("llama-3.2-1b", "position.scaling.factor", "1e300", "beyond the limit 10000"),
    ("deepseek-v2", "position.scaling.mscale", "1e200", "beyond the limit 1000"),
    ("granite-3.0-2b", "multipliers.embedding", "1e300", "beyond the limit 1e+06"),
    ("granite-3.0-2b", "multipliers.logits", "1e-300", "below the limit 1e-06"),
    ("granite-3.0-2b", "multipliers.residual", "-1e30", "beyond the limit 1e+06"),
    ("llama-3.2-1b", "norm.eps", "1e-300", "below the limit 1e-12"),
    ("deepseek-v2", "ffn.router.scaling_factor", "1e300", "beyond the limit 1e+06"),
])
def test_numbers_of_absurd_magnitude_are_refused(model, key, value, words, run_cli):
    refused(run_cli, "show", model, "--set", f"{key}={value}",
            words=(f"overrides: {key}: ", words, limits.WHERE))


def test_a_config_json_theta_is_bounded_too(tmp_path, run_cli):
    config = {"model_type": "llama", "vocab_size": 128, "hidden_size": 64, "intermediate_size": 64,
              "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
              "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 1e300}
    (tmp_path / "config.json").write_text(json.dumps(config))
    refused(run_cli, "show", tmp_path, words=("config.json", "1e+300", "beyond the limit"))


def _float_fields(cls, seen) -> set[str]:
    out = set()
    for name, tp in typing.get_type_hints(cls).items():
        for arm in typing.get_args(tp) or (tp,):
            for inner in typing.get_args(arm) or (arm,):
                if inner is float:
                    out.add(name)
                elif dataclasses.is_dataclass(inner) and inner not in seen:
                    seen.add(inner)
                    out |= _float_fields(inner, seen)
    return out


def test_every_number_key_has_a_limit():
    missing = _float_fields(ModelSpec, set()) - set(limits.FLOAT_LIMITS)
    assert not missing, f"add these to FLOAT_LIMITS in {limits.WHERE}: {sorted(missing)}"


def _floats(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _floats(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _floats(v, key)
    elif isinstance(node, float):
        yield key, node


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_number_is_well_inside_the_limits(name):
    for key, value in _floats(to_mapping(load_spec(name))):
        low, high = limits.FLOAT_LIMITS[key]
        room = 1 if key == "rotary_fraction" else 4  # a fraction's top is its definition
        assert value == 0 or low * 4 <= abs(value) <= high / room, (key, value)


# --- YAML 1.1's surprising integers, an empty select ---------------------------------------

@pytest.mark.parametrize("written", ["1:30", "017"])
def test_base_60_and_leading_zero_integers_are_not_numbers(written, tmp_path, run_cli):
    path = spec_file(tmp_path, GOOD.replace("n_layers: 4", f"n_layers: {written}"))
    refused(run_cli, "show", path, words=(path, "n_layers", f"expected an integer, got "
                                                            f"'{written}'"))


def test_an_unquoted_select_slice_is_a_slice(tmp_path):
    spec = load_spec(spec_file(tmp_path, GOOD + "layers: [{select: 1:3, note: x}]\n"))
    assert [layer.index for layer in spec.plan if layer.note] == [1, 2]


@pytest.mark.parametrize("select", ["''", "' '"])
def test_an_empty_select_string_is_refused(select, run_cli):
    refused(run_cli, "show", "llama-3.2-1b", "--set", f"layers=[{{select: {select}, note: x}}]",
            words=("overrides: layers[0].select", "expected layer indices"))


# --- config.json: Nemotron-H, DeepSeek ----------------------------------------------------

def _nemotron(tmp_path, **changes):
    from archscope.spec.hf import write_hf_config

    write_hf_config(load_spec("nemotron-h-4b"), tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config.update(changes)
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def test_a_nemotron_h_pattern_shorter_than_its_layers_is_refused(tmp_path, run_cli):
    folder = _nemotron(tmp_path, hybrid_override_pattern="M*M-")
    refused(run_cli, "show", folder, words=("config.json: num_hidden_layers", "lists 4 layers"))


def test_a_nemotron_h_window_of_ten_to_the_twelve_is_refused(tmp_path, run_cli):
    folder = _nemotron(tmp_path, sliding_window=10**12)
    refused(run_cli, "show", folder, words=("config.json: sliding_window", "beyond the limit"))


def test_deepseek_v2_names_heads_that_do_not_divide_the_width(tmp_path, run_cli):
    from archscope.spec.hf import write_hf_config

    write_hf_config(load_spec("deepseek-v2-lite"), tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "hidden_size": 2050}))
    refused(run_cli, "show", tmp_path, words=("num_attention_heads", "DeepseekV2Config"))


def test_deepseek_v3_takes_any_width_as_transformers_does(tmp_path):
    """A KeyError while this message was built (issue 35): DeepseekV3Config itself accepts a
    width the heads do not divide (MLA's heads have their own widths), and so does archscope."""
    config = {**DEEPSEEK_V3, **DEEPSEEK_V3_TINY, "hidden_size": 250, "num_nextn_predict_layers": 0}
    (tmp_path / "config.json").write_text(json.dumps(config))
    spec = load_spec(tmp_path)
    logits = build_model(spec, "cpu", torch.float32, 0)(torch.zeros(1, 3, dtype=torch.long))
    assert spec.d_model == 250 and bool(torch.isfinite(logits).all())
