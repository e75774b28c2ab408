"""Quirks of the dense long-tail families that the conformance suite's cases do not reach:
config rules of transformers' classes that archscope reproduces (checked against the class),
and what it refuses where the class would fail or archscope has no component."""

from __future__ import annotations

import warnings

import pytest
from transformers import AutoConfig

from archscope.errors import SpecError
from archscope.spec import load_spec
from hf_configs import write_config

TINY = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=4,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
_YARN = dict(rope_type="yarn", factor=8.0, original_max_position_embeddings=16)


def _load(tmp_path, config: dict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # keys the file lacks: transformers' defaults, noted
        return load_spec(write_config(tmp_path / "m", config))


def _refused(tmp_path, config: dict, key: str, words: str | None = None) -> None:
    with pytest.raises(SpecError, match=words) as caught:
        _load(tmp_path, config)
    assert caught.value.key == key


def test_olmo3_legacy_rope_theta_reaches_the_full_layers_only(tmp_path):
    """As the released checkpoints say it (rope_theta and a YaRN rope_scaling, transformers
    4.57's layout): Olmo3Config gives both to the full layers, and the sliding layers its
    default_theta, whatever rope_theta says."""
    config = dict(TINY, model_type="olmo3", sliding_window=8, rope_theta=1e6,
                  rope_scaling=dict(_YARN, attention_factor=1.2079441541679836))
    theirs = AutoConfig.for_model(**config).rope_parameters
    spec = _load(tmp_path, config)
    for layer, layer_type in zip(spec.plan, ["sliding_attention"] * 3 + ["full_attention"]):
        assert layer.layer_type == layer_type
        assert layer.position.theta == theirs[layer_type]["rope_theta"]
        assert (layer.position.scaling is not None) == (layer_type == "full_attention")
    assert spec.plan[3].position.scaling.factor == theirs["full_attention"]["factor"]


def test_olmo3_refuses_an_attention_factor_its_yarn_does_not_compute(tmp_path):
    config = dict(TINY, model_type="olmo3", sliding_window=8,
                  rope_scaling=dict(_YARN, attention_factor=1.3))
    _refused(tmp_path, config, "rope_scaling.attention_factor", "transformers computes")
    flat = dict(TINY, model_type="olmo3", sliding_window=8,
                rope_parameters={"rope_type": "default", "rope_theta": 1e6})
    _refused(tmp_path / "flat", flat, "rope_parameters.rope_type", "one RoPE per layer type")


def test_exaone4_string_pattern_needs_layer_types(tmp_path):
    config = dict(TINY, model_type="exaone4", sliding_window=8, sliding_window_pattern="LLLG")
    with pytest.raises(TypeError):  # Exaone4Config computes (i + 1) % pattern
        AutoConfig.for_model(**config)
    _refused(tmp_path, config, "layer_types", "positive integer")
    types = ["sliding_attention"] * 3 + ["full_attention"]
    spec = _load(tmp_path / "typed", dict(config, layer_types=types))
    assert [(layer.window, layer.attention.rope) for layer in spec.plan] == \
        [(8, True)] * 3 + [(None, False)]  # the global layer is NoPE


def test_exaone4_without_a_window_rotates_every_layer(tmp_path):
    spec = _load(tmp_path, dict(TINY, model_type="exaone4", sliding_window=None,
                                layer_types=["full_attention"] * 4))
    assert all(layer.attention.rope and layer.window is None for layer in spec.plan)


def test_cwm_keeps_its_default_rope_over_a_top_level_theta(tmp_path):
    config = dict(TINY, model_type="cwm", sliding_window=8, rope_theta=5e5)
    assert AutoConfig.for_model(**config).rope_parameters["rope_theta"] == 1e6  # ignored
    _refused(tmp_path, config, "rope_theta", "ignores this key")


def test_helium_needs_heads_that_fill_the_width(tmp_path):
    _refused(tmp_path, dict(TINY, model_type="helium", head_dim=8), "head_dim",
             "hidden_size x hidden_size")


def test_granite_swa_needs_a_theta_per_layer(tmp_path):
    _refused(tmp_path, dict(TINY, model_type="granite_swa", layer_rope_theta=[1e4, 0]),
             "layer_rope_theta", "at least 4")


def test_gemma_bidirectional_attention_is_refused(tmp_path):
    _refused(tmp_path, dict(TINY, model_type="gemma", use_bidirectional_attention=True),
             "use_bidirectional_attention", "causal")


@pytest.mark.parametrize("beta, key", [(-0.1, "rope_parameters.llama_4_scaling_beta"),
                                       (None, "rope_parameters.llama_4_scaling_beta")])
def test_ministral3_query_scale_without_beta_or_below_0_is_refused(beta, key, tmp_path):
    rope = dict(rope_type="default", rope_theta=1e6, original_max_position_embeddings=16,
                **({} if beta is None else {"llama_4_scaling_beta": beta}))
    _refused(tmp_path, dict(TINY, model_type="ministral3", rope_parameters=rope), key)


def test_mistral3_reads_its_text_model_by_its_model_type(tmp_path):
    text = dict(TINY, model_type="ministral", head_dim=16, sliding_window=8,
                layer_types=["sliding_attention", "full_attention"] * 2)
    spec = _load(tmp_path, dict(model_type="mistral3", text_config=text))
    assert [layer.window for layer in spec.plan] == [8, None, 8, None]
    _refused(tmp_path / "bad", dict(model_type="mistral3", text_config=dict(text, head_dim=None)),
             "text_config.head_dim", "MinistralAttention")
    _refused(tmp_path / "other", dict(model_type="mistral3",
                                      text_config=dict(TINY, model_type="qwen3")),
             "text_config.model_type", "mistral")


def test_mistral3_text_model_ties_as_its_own_config_says(tmp_path):
    """Mistral Small 3.1's config.json says nothing of tying on either level: the text
    model's class default (false) decides; a top level that disagrees is ambiguous."""
    text = dict(TINY, model_type="mistral", sliding_window=None)
    assert not _load(tmp_path, dict(model_type="mistral3", text_config=text)).tie_embeddings
    _refused(tmp_path / "both", dict(model_type="mistral3", text_config=text,
                                     tie_word_embeddings=True), "tie_word_embeddings",
             "ambiguous")


def test_apertus_reads_xielu_by_default_and_another_activation(tmp_path):
    spec = _load(tmp_path / "default", dict(TINY, model_type="apertus"))
    assert (spec.ffn.kind, spec.ffn.activation) == ("mlp", "xielu")  # the class default
    spec = _load(tmp_path / "relu2", dict(TINY, model_type="apertus", hidden_act="relu2"))
    assert (spec.ffn.kind, spec.attention.qk_norm) == ("relu2", "head")
    assert spec.position.scaling.kind == "llama3"  # ApertusConfig's default


def test_xielu_is_a_two_matrix_mlp_activation_only():
    from parity import tiny_spec
    tiny_spec(ffn=dict(kind="mlp", d_ff=32, activation="xielu"))
    with pytest.raises(SpecError) as err:
        tiny_spec(ffn=dict(kind="swiglu", d_ff=32, activation="xielu"))
    assert err.value.key == "ffn.activation" and "kind 'mlp' only" in str(err.value)
