"""The weight table's `either` rule (mapping.Rule.either): one HF tensor whose archscope name
depends on the layer (Nemotron-H's block `norm`), mapped to the alternative the model has."""

import torch

from archscope.weights.mapping import _rules, hf_to_ours, ours_to_hf

TABLE = _rules(("h.{i}.norm.weight", ["l.{i}.input_norm.weight", "l.{i}.ffn_norm.weight"],
                {"either": True}),
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


def test_none_or_both_alternatives_is_unmatched():
    hf = {"h.2.norm.weight": torch.zeros(4), "h.3.norm.weight": torch.zeros(4)}
    both = {**SHAPES, "l.3.input_norm.weight": (4,), "l.3.ffn_norm.weight": (4,)}
    ours, unmatched = hf_to_ours(TABLE, hf, both)
    assert ours == {} and unmatched == ["h.2.norm.weight", "h.3.norm.weight"]
