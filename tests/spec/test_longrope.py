"""The spec's longrope scaling (position.scaling.kind longrope, Phi-3's): what it requires and
refuses, each refusal naming the key (its rotation is checked against transformers' Phi3 in the
conformance suite, its table in tests/estimate/test_rope_table.py)."""

import pytest

from archscope.errors import SpecError
from parity import tiny_spec

SCALING = dict(kind="longrope", factor=8.0, original_max_seq_len=8,
               short_factor=[1.0, 1.5, 2.0, 3.0], long_factor=[1.0, 2.0, 4.0, 8.0])


def _spec(scaling: dict, fraction: float | None = 0.5):
    return tiny_spec(attention=dict(rotary_fraction=fraction),
                     position=dict(kind="rope", theta=1e4, scaling=scaling))


def test_the_default_attention_factor_is_transformers_rule():
    """sqrt(1 + ln factor / ln original) above factor 1; 1 at or below it; a given one kept."""
    s = _spec(SCALING).position.scaling
    assert s.longrope_attention == pytest.approx((1 + 1) ** 0.5)  # ln 8 / ln 8
    assert _spec({**SCALING, "factor": 1.0}).position.scaling.longrope_attention == 1.0
    assert _spec({**SCALING, "attention_factor": 1.3}).position.scaling.longrope_attention == 1.3


@pytest.mark.parametrize("change, key, words", [
    ({"short_factor": None}, "position.scaling.short_factor", "required for longrope"),
    ({"original_max_seq_len": None}, "position.scaling.original_max_seq_len", "required"),
    ({"long_factor": [1.0, 2.0, 0.0, 8.0]}, "position.scaling.long_factor", "positive"),
    ({"short_factor": [1.0] * 8}, "position.scaling.short_factor", "rotates 4 pairs"),
    ({"original_max_seq_len": 1}, "position.scaling.original_max_seq_len", "over 1"),
    ({"kind": "yarn"}, "position.scaling.short_factor", "only applies when kind is 'longrope'"),
])
def test_a_bad_longrope_names_its_key(change, key, words):
    with pytest.raises(SpecError, match=words) as err:
        _spec({k: v for k, v in {**SCALING, **change}.items() if v is not None})
    assert err.value.key == key


def test_the_whole_head_takes_one_factor_per_pair_of_it():
    with pytest.raises(SpecError, match="rotates 8 pairs"):
        _spec(SCALING, fraction=None)
    assert _spec({**SCALING, "short_factor": [1.0] * 8, "long_factor": [2.0] * 8},
                 fraction=None).attention.rotary_dim == 16
