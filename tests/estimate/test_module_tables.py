"""The module tables from the spec alone (estimate/structure.py, from each kind's parts): their
tensors hold exactly the parameters the parts count. The tables against the built module:
tests/estimate/test_crosscheck_builder.py (every preset) and tests/cli/test_show.py."""

import math

import pytest

from archscope.estimate.structure import (distinct_layers, layer_module_rows, layer_parts,
                                          module_rows)
from archscope.kinds.base import Weight
from archscope.spec import load_spec, preset_names


@pytest.mark.parametrize("name", preset_names())
def test_parts_tensors_hold_their_parameters(name):
    spec = load_spec(name)
    for layer, _ in distinct_layers(spec):
        for part in layer_parts(spec, layer):
            held = sum(math.prod(w.shape) for w in part.weights)
            assert held == part.params * part.copies, (layer.index, part.name)


def test_rows_follow_the_module_walk():
    """A module's own tensors before its children's, children in the order first met."""
    weights = [Weight("norm", "RMSNorm", "weight", (4,)),
               Weight("mixer.in_proj", "Linear", "weight", (8, 4)),
               Weight("mixer", "Mixer", "A_log", (2,)),
               Weight("mixer.out_proj", "Linear", "weight", (4, 8)),
               Weight("mixer", "Mixer", "D", (2,))]
    rows = module_rows(weights)
    assert [r["module"] for r in rows] == ["norm", "mixer", "mixer.in_proj", "mixer.out_proj"]
    assert rows[1]["shapes"] == "A_log[2], D[2]" and rows[1]["params"] == 4
    assert rows[2]["weights"] == {"weight": [8, 4]}


def test_layers_with_equal_tables_share_one():
    """gpt-oss alternates sliding and full attention: different specs, the same modules."""
    spec = load_spec("gpt-oss-20b")
    assert len({layer.attention for layer in spec.plan}) == 2
    assert list(layer_module_rows(spec)) == [tuple(range(spec.n_layers))]
