"""fuse_projections: one Linear for q/k/v and for gate/up, the same logits, and the checkpoint
names recoverable (views, no copy) for the weight mapping and transformers' twin."""

from __future__ import annotations

import pytest
import torch

from archscope.nn import build_model
from archscope.nn.fuse import fuse_projections, unfused_state_dict
from archscope.nn.linear import Linear
from parity import tiny_spec

VARIANTS = {
    "llama": {},
    "biases-window": dict(attention=dict(bias=True, window=5)),
    "moe-shared": dict(ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=16,
                                n_shared_experts=1)),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fused_model_gives_the_same_logits(variant):
    spec = tiny_spec(**VARIANTS[variant])
    model = build_model(spec)
    with torch.no_grad():  # non-zero biases, so a bias dropped or misplaced would show
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.normal_(0.0, 0.1)
    before = model.state_dict()
    before = {k: v.clone() for k, v in before.items()}
    ids = torch.randint(0, spec.vocab_size, (2, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        expected = model(ids)
        n_params = sum(p.numel() for p in model.parameters())
        fused = fuse_projections(model)
        got = model(ids)
    gated = sum(1 for layer in model.layers if hasattr(layer.mlp, "gate_up_proj")
                or getattr(layer.mlp, "shared_experts", None) is not None)
    assert fused == spec.n_layers + gated
    assert not {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()} & {
        "q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"}
    assert all(type(model.get_submodule(n)) is Linear for n, _ in model.named_modules()
               if n.endswith(("qkv_proj", "gate_up_proj")))
    assert sum(p.numel() for p in model.parameters()) == n_params
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)  # fp32 rounding only
    back = unfused_state_dict(model)
    assert back.keys() == before.keys()
    assert all(torch.equal(back[k], before[k]) for k in before)
    assert fuse_projections(model) == 0  # already fused: nothing to do


def test_a_spec_fused_model_is_left_alone():
    """Phi-3's own qkv_proj / gate_up_proj are its checkpoint names: nothing to fuse or split."""
    spec = tiny_spec(attention=dict(fused_qkv=True), ffn=dict(fused_gate_up=True))
    model = build_model(spec)
    assert fuse_projections(model) == 0
    assert unfused_state_dict(model).keys() == model.state_dict().keys()


def test_transformers_twin_loads_a_fused_model():
    from archscope.measure.reference import hf_twin, max_abs_logit_diff

    spec = tiny_spec()
    model = build_model(spec)
    fuse_projections(model)
    ids = torch.randint(0, spec.vocab_size, (1, 6), generator=torch.Generator().manual_seed(3))
    assert max_abs_logit_diff(model, hf_twin(model), ids) < 1e-4
