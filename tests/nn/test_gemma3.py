"""Gemma 3 (sandwich norms scaling by (1 + weight), per-head QK-norm, GeGLU, a scaled embedding,
query_pre_attn_scalar, sliding and global layers each with its own RoPE) against transformers'
Gemma3ForCausalLM, beyond the conformance cases' parity: one RoPE table per distinct RoPE, two
negative controls (no (1 + weight); one RoPE for every layer), the norms' places and zero
start, the bytes the sliding layers hold by hand, the presets' parameters on the meta device,
and a multimodal checkpoint whose language model loads.
"""

import pytest
import torch
import transformers

from archscope.estimate import kv_cache_bytes
from archscope.nn import build_model
from archscope.nn.model import NORM_SLOTS
from parity import (checked_preset, held_cache_bytes, load_same_weights, max_diff, tiny_spec,
                    twin_case)

TOL = 1e-4
T = 24  # a prompt of 24 tokens over a window of 4
WINDOW = 4
GLOBAL = [2, 5]  # Gemma's pattern with period 3: layers 2 and 5 full, the other four sliding
LOCAL_ROPE = dict(kind="rope", theta=10000.0)
GLOBAL_ROPE = dict(theta=1000000.0, scaling=dict(kind="linear", factor=8.0))  # the 27B's


def gemma(**changes):
    d, head_dim, scalar = 64, 16, 24  # query_pre_attn_scalar differs from head_dim, as in 27B
    base = dict(n_layers=6, d_model=d, tie_embeddings=True,
                norm=dict(kind="rmsnorm", eps=1e-6, position="sandwich", unit_offset=True),
                position=LOCAL_ROPE,
                attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=head_dim,
                               qk_norm="head", window=WINDOW),
                ffn=dict(kind="geglu", d_ff=96),
                multipliers=dict(embedding=d ** 0.5, attention=scalar ** -0.5),
                layers=[dict(select=GLOBAL, attention=dict(window=None), position=GLOBAL_ROPE)])
    return tiny_spec(**{**base, **changes})


@pytest.fixture(scope="module")
def setup():
    return twin_case(gemma(), T)


def test_transformers_builds_the_same_layer_types(setup):
    spec, hf, ours, _, _ = setup
    assert type(hf).__name__ == "Gemma3ForCausalLM"
    assert hf.config.layer_types == [layer.layer_type for layer in spec.plan]
    assert [i for i, t in enumerate(hf.config.layer_types) if t == "full_attention"] == GLOBAL
    assert hf.config.rope_parameters["sliding_attention"]["rope_theta"] == 10000.0
    assert hf.config.rope_parameters["full_attention"]["factor"] == 8.0
    assert hf.config.query_pre_attn_scalar == 24
    assert len(ours.rotaries) == 2  # one cos/sin table per distinct RoPE, not one per layer
    assert ours.rope_of == (0, 0, 1, 0, 0, 1)


def _with_their_weights(spec, hf):
    return load_same_weights(spec, hf, "gemma3_text")


def test_plain_weight_scale_breaks_parity(setup):
    """The same weights read as weight rather than (1 + weight): far off."""
    spec, hf, _, ids, reference = setup
    plain = _with_their_weights(gemma(norm=dict(kind="rmsnorm", eps=1e-6,
                                                position="sandwich")), hf)
    with torch.no_grad():
        assert max_diff(plain(ids), reference) > 0.1


def test_one_rope_for_every_layer_breaks_parity(setup):
    """The global layers rotated with the local theta: far off, so per-layer RoPE is exercised."""
    spec, hf, _, ids, reference = setup
    one = _with_their_weights(gemma(layers=[dict(select=GLOBAL, attention=dict(window=None))]),
                              hf)
    with torch.no_grad():
        assert max_diff(one(ids), reference) > 0.1


def test_norms_sit_where_transformers_puts_them(setup):
    _, hf, ours, _, _ = setup
    names = {n for n, _ in ours.layers[0].named_children() if "norm" in n}
    assert names == set(NORM_SLOTS["sandwich"].values())
    assert names == {n for n, _ in hf.model.layers[0].named_children() if "norm" in n}
    assert len(names) == gemma().norm.per_layer


def test_unit_offset_norms_start_at_zero():
    model = build_model(gemma())
    norms = [m for m in model.modules() if type(m).__name__ == "RMSNorm"]
    assert len(norms) == 6 * (4 + 2) + 1  # four per block, q_norm and k_norm, the final one
    assert all(m.unit_offset and not m.weight.any() for m in norms)


def test_cache_after_a_real_prefill_holds_the_estimate(setup):
    spec, _, ours, ids, _ = setup
    held = held_cache_bytes(ours, ids, 2 * T)
    assert held == kv_cache_bytes(spec, T, ids.shape[0], "fp32")
    per_token = 2 * 2 * 16 * 4  # k and v, 2 KV heads x 16, fp32
    assert held == ids.shape[0] * per_token * (len(GLOBAL) * T + 4 * WINDOW)


@pytest.mark.parametrize("name, total", [("gemma-3-1b", 999_885_952),
                                         ("gemma-3-27b", 27_009_346_304)])
def test_preset_params_on_meta_equal_transformers_and_the_estimate(name, total):
    _, p, _ = checked_preset(name, "Gemma3ForCausalLM")
    assert p.total == p.active == total  # dense: every parameter is active


def test_a_multimodal_checkpoint_loads_its_language_model(setup, tmp_path):
    """Gemma3ForConditionalGeneration.save_pretrained (a tiny SigLIP tower beside the same text
    model): the vision tower and projector are skipped with a warning, the language model
    loads and gives the text model's logits."""
    from archscope.weights import load_checkpoint
    from archscope.weights.validate import SkippedVisionWarning

    spec, hf, _, ids, reference = setup
    vision = dict(model_type="siglip_vision_model", hidden_size=16, intermediate_size=32,
                  num_hidden_layers=1, num_attention_heads=2, image_size=28, patch_size=14)
    config = transformers.Gemma3Config(text_config=hf.config.to_dict(), vision_config=vision,
                                       mm_tokens_per_image=4)
    wrapper = transformers.Gemma3ForConditionalGeneration(config).eval()
    wrapper.model.language_model.load_state_dict(hf.model.state_dict())
    wrapper.lm_head.weight = hf.lm_head.weight
    wrapper.save_pretrained(tmp_path / "multimodal")
    with pytest.warns(SkippedVisionWarning, match="vision tower"):
        ours, _ = load_checkpoint(tmp_path / "multimodal")
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < TOL
