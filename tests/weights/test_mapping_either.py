"""One HF tensor name, two archscope names by layout (Nemotron-H's block `norm`, Granite 4.0's
shared_mlp): two rules match, and mapping.hf_to_ours takes the first whose targets the model
has; the inverse writes each back under the one HF name."""

import torch

from archscope.spec.families.base import rules as _rules
from archscope.weights.mapping import hf_to_ours, ours_to_hf

TABLE = _rules(("h.{i}.norm.weight", "l.{i}.input_norm.weight"),
               ("h.{i}.norm.weight", "l.{i}.ffn_norm.weight"),
               ("h.{i}.fused.weight", ["l.{i}.a.weight", "l.{i}.b.weight"]))  # a fusion, as before
SHAPES = {"l.0.input_norm.weight": (4,), "l.1.ffn_norm.weight": (4,),
          "l.0.a.weight": (2, 3), "l.0.b.weight": (1, 3)}


def test_each_layer_gets_the_alternative_it_has_and_back():
    hf = {"h.0.norm.weight": torch.arange(4.0), "h.1.norm.weight": -torch.arange(4.0),
          "h.0.fused.weight": torch.ones(3, 3)}
    ours, unmatched = hf_to_ours(TABLE, hf, SHAPES)
    assert not unmatched
    assert set(ours) == set(SHAPES)
    assert torch.equal(ours["l.1.ffn_norm.weight"], -torch.arange(4.0))
    assert ours["l.0.a.weight"].shape == (2, 3)  # a fusion still splits
    back = ours_to_hf(TABLE, ours)
    assert set(back) == set(hf) and all(torch.equal(back[k], hf[k]) for k in hf)


def test_a_layer_with_neither_gets_the_first_and_the_loader_names_it():
    """No alternative fits: the first rule's name, which the model lacks (the loader's
    shape and presence check then names it as unexpected)."""
    ours, unmatched = hf_to_ours(TABLE, {"h.2.norm.weight": torch.zeros(4)}, SHAPES)
    assert list(ours) == ["l.2.input_norm.weight"] and not unmatched
