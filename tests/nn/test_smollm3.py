"""SmolLM3 (Llama + NoPE layers: attention.rope false) against transformers' own class, beyond
the conformance cases' parity: the NoPE layers transformers builds and archscope's modules that
do not rotate, the same weights with RoPE on every layer far off (so the parity exercises NoPE),
and the preset's parameters on the meta device.
"""

import pytest
import torch

from archscope.spec.hf import spec_to_hf_config
from parity import checked_preset, load_same_weights, max_diff, tiny_spec, twin_case

T = 20

# 4 layers, NoPE on 1 and 3 (SmolLM3's pattern with interval 2); tied, as SmolLM3
NOPE = dict(n_layers=4, tie_embeddings=True, norm=dict(kind="rmsnorm", eps=1e-6),
            layers=[dict(select="1::2", attention=dict(rope=False))])


@pytest.fixture(scope="module")
def setup():
    return twin_case(tiny_spec(**NOPE), T)


def test_transformers_builds_smollm3_with_our_nope_layers(setup):
    spec, hf, _, _, _ = setup
    assert type(hf).__name__ == "SmolLM3ForCausalLM"
    assert hf.config.no_rope_layers == [1, 0, 1, 0]
    assert [layer.self_attn.use_rope for layer in hf.model.layers] == [1, 0, 1, 0]
    assert [layer.attention.rope for layer in spec.plan] == [True, False, True, False]


def test_rope_on_every_layer_breaks_parity(setup):
    """The same weights with RoPE on every layer: far off, so the NoPE layers are exercised."""
    spec, hf, _, ids, reference = setup
    model = load_same_weights(tiny_spec(**{**NOPE, "layers": []}), hf, "smollm3")
    with torch.no_grad():
        assert max_diff(model(ids), reference) > 1e-3


def test_nope_modules_do_not_rotate(setup):
    _, _, ours, _, _ = setup
    assert [layer.self_attn.rotary for layer in ours.layers] == [True, False, True, False]


def test_preset_params_on_meta_equal_transformers_and_the_estimate():
    spec, p, theirs = checked_preset("smollm3-3b", "SmolLM3ForCausalLM")
    assert spec_to_hf_config(spec)["architectures"] == ["SmolLM3ForCausalLM"]
    assert theirs.config.no_rope_layers == [int((i + 1) % 4 != 0) for i in range(36)]
    assert p.total == 3_075_098_624
