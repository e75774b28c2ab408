"""Qwen3 (Llama + per-head QK-norm) and OLMo 2 (Llama + full-width QK-norm + each sublayer's
output normed) against transformers' own classes, beyond the conformance cases' parity: the same
weights without q_norm/k_norm far off (so the parity exercises them), and the full-size presets'
parameters on the meta device, their QK-norm widths and the card's figures.
"""

import pytest
import torch

from archscope.estimate import count_params
from archscope.nn import build_model
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.weights import hf_to_ours, table_for
from parity import checked_preset, max_diff, tiny_spec, twin_case

T = 20

# head_dim 24 x 4 heads = 96 != d_model 64 (as in every Qwen3); GQA, so OLMo 2's k_norm
# (2 x 24 wide) differs from its q_norm (4 x 24 wide).
_ATTN = dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=24)
FAMILIES = {
    "qwen3": dict(norm=dict(kind="rmsnorm", eps=1e-6),
                  attention=dict(_ATTN, qk_norm="head"), tie_embeddings=True),
    "olmo2": dict(norm=dict(kind="rmsnorm", eps=1e-6, position="output"),
                  attention=dict(_ATTN, qk_norm="full")),
}
PRESETS = {"qwen3-0.6b": "Qwen3ForCausalLM", "qwen3-8b": "Qwen3ForCausalLM",
           "qwen3-32b": "Qwen3ForCausalLM", "olmo-2-7b": "Olmo2ForCausalLM"}


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request):
    return (request.param, *twin_case(tiny_spec(**FAMILIES[request.param]), T))


def test_removing_the_qk_norm_breaks_parity(family):
    """The same weights in a model without q_norm/k_norm: far off, so the test exercises them."""
    name, spec, hf, _, ids, reference = family
    without = tiny_spec(**{**FAMILIES[name], "attention": _ATTN})
    model = build_model(without)
    shapes = {k: v.shape for k, v in model.state_dict().items()}
    mapped, _ = hf_to_ours(table_for(spec_to_hf_config(spec)["model_type"]), hf.state_dict(),
                           shapes)
    dropped = [k for k in mapped if k.endswith(("q_norm.weight", "k_norm.weight"))]
    assert len(dropped) == 2 * spec.n_layers
    model.load_state_dict({k: v for k, v in mapped.items() if k not in dropped}, strict=True)
    with torch.no_grad():
        assert max_diff(model(ids), reference) > 1e-3


@pytest.mark.parametrize("name", PRESETS)
def test_preset_params_on_meta_equal_transformers_and_the_estimate(name):
    spec, p, _ = checked_preset(name, PRESETS[name])
    assert spec_to_hf_config(spec)["architectures"] == [PRESETS[name]]
    qk = p.breakdown
    width = spec.attention.head_dim if spec.attention.qk_norm == "head" else spec.d_model
    assert qk["attention.q_norm"] == spec.n_layers * width  # OLMo 2 7B: MHA, q and k d_model


def test_qwen3_0_6b_matches_its_model_card():
    """The card: "Number of Parameters: 0.6B (0.44B non-embedding)"."""
    p = count_params(load_spec("qwen3-0.6b"))
    assert (round(p.total / 1e9, 1), round(p.non_embedding / 1e9, 2)) == (0.6, 0.44)
