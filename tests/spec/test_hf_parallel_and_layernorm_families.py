"""What only the families of parallel blocks, LayerNorms and soft caps have (cohere, cohere2,
gemma2, phi, stablelm, nemotron; their configs are checked in the conformance suite): the
configs transformers' classes build wrong or archscope does not model, refused naming the key,
and Cohere's logit_scale, a factor written for the spec's divisor, read back exactly."""

import warnings

import pytest

from archscope.errors import SpecError
from archscope.spec import load_spec
from archscope.spec.families.cohere import reciprocal
from hf_configs import write_config

TINY = dict(vocab_size=97, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
REFUSED = {  # case -> (model_type, keys, the key named, a word of the reason)
    "cohere-null-logit-scale": ("cohere", {"logit_scale": None}, "logit_scale", "multiplies"),
    "cohere2-sliding-layer-without-window": (
        "cohere2", {"sliding_window": None, "layer_types": ["sliding_attention",
                                                             "full_attention"]},
        "sliding_window", "sliding_attention"),
    "gemma2-bidirectional": ("gemma2", {"use_bidirectional_attention": True},
                             "use_bidirectional_attention", "causal"),
    "phi-qk-layernorm-narrow-heads": ("phi", {"head_dim": 8, "qk_layernorm": True}, "head_dim",
                                      "fails"),
    "stablelm-per-head-qk-layernorm": ("stablelm", {"qk_layernorm": True}, "qk_layernorm",
                                       "one module per head"),
    "stablelm-head-dim-its-rope-reads": ("stablelm", {"head_dim": 8}, "head_dim", "RoPE"),
    "nemotron-null-kv-heads": ("nemotron", {"num_key_value_heads": None},
                               "num_key_value_heads", "fails"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_naming_the_key(case, tmp_path):
    model_type, keys, key, word = REFUSED[case]
    folder = write_config(tmp_path / case, {"model_type": model_type, **TINY, **keys})
    with warnings.catch_warnings(), pytest.raises(SpecError) as err:
        warnings.simplefilter("ignore")  # keys the file lacks take transformers' defaults
        load_spec(folder)
    assert err.value.key == key and word in err.value.detail


@pytest.mark.parametrize("scale", [0.0625, 0.8333333333333334, 0.1, 1 / 3, 0.7])
def test_logit_scale_reads_back_through_its_reciprocal(scale, tmp_path):
    """The spec keeps logits / (1 / logit_scale); the writer's factor reads back as the same
    divisor, bit for bit (Command R+ says 0.8333333333333334)."""
    divisor = 1 / scale
    assert 1 / reciprocal(divisor, "multipliers.logits") == divisor
    folder = write_config(tmp_path / "c", {"model_type": "cohere", **TINY, "logit_scale": scale})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_spec(folder).mults.logits == divisor
