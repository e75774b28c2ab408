"""GLM-4.5 (glm4_moe: q/k/v bias, per-head QK-norm, RoPE on half of each head, DeepSeek-V3's
sigmoid noaux_tc MoE with shared experts after dense first layers) against transformers'
Glm4MoeForCausalLM, beyond the conformance case's parity: the tiny model's layers and loaded
correction bias, whole-head RoPE far off; the presets' parameters on the meta device against
the card; the multi-token-prediction modules, counted apart, against the modules they are made
of; and the loader skipping an MTP module, refusing a layer past it and a missing bias.
"""

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

from archscope.errors import CheckpointError
from archscope.estimate import count_params
from archscope.estimate.structure import mtp_parts
from archscope.nn.model import Block
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.weights import load_checkpoint
from archscope.weights.validate import SkippedMTPWarning
from parity import (checked_preset, load_same_weights, max_diff, random_correction_bias, tiny_spec,
                    twin_case)

TOL = 1e-4
T = 20


def _spec(rotary_fraction=0.5):
    """3 layers, the first dense (first_k_dense_replace 1); 8 experts in 2 groups, 1 eligible;
    a shared expert; q/k/v bias, per-head QK-norm, RoPE on 8 of each head's 16 dims."""
    return tiny_spec(
        n_layers=3, max_seq_len=128, mtp_layers=1,
        attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16, bias=True,
                       out_bias=False, qk_norm="head", rotary_fraction=rotary_fraction),
        ffn=dict(kind="moe", n_experts=8, top_k=2, d_expert=32, n_shared_experts=1,
                 router=dict(method="noaux_tc", scoring="sigmoid", correction_bias=True,
                             n_group=2, topk_group=1, normalize=True, scaling_factor=2.5)),
        layers=[dict(select="0:1", ffn=dict(kind="swiglu", d_ff=96))])


@pytest.fixture(scope="module")
def family():
    return twin_case(_spec(), T, prepare=random_correction_bias)  # a bias hf_model leaves at 0


def test_transformers_builds_the_family_class(family):
    spec, hf, ours, _, _ = family
    assert type(hf).__name__ == "Glm4MoeForCausalLM"
    assert [type(layer.mlp).__name__ for layer in hf.model.layers] == [
        "Glm4MoeMLP", "Glm4MoeMoE", "Glm4MoeMoE"]
    attn = hf.model.layers[0].self_attn
    assert attn.q_proj.bias is not None and attn.o_proj.bias is None and attn.use_qk_norm
    assert hf.model.rotary_emb.inv_freq.numel() * 2 == spec.attention.rotary_dim == 8
    bias = hf.model.layers[1].mlp.gate.e_score_correction_bias
    assert bias.abs().max() > 0.1  # the random bias is really there, and loaded
    assert torch.equal(ours.layers[1].mlp.gate.e_score_correction_bias, bias)


def test_rotating_whole_heads_breaks_parity(family):
    """The same weights with RoPE over the whole head: far off, so partial RoPE is exercised."""
    _, hf, _, ids, reference = family
    whole = load_same_weights(_spec(rotary_fraction=None), hf, "glm4_moe")
    with torch.no_grad():
        assert max_diff(whole(ids), reference) > 1.0


@pytest.mark.parametrize("name, total, active, mtp", [
    ("glm-4.5", 352_797_814_784, 33_632_251_904, 3_988_069_632),
    ("glm-4.5-air", 106_852_245_504, 13_424_123_904, 2_375_059_456)])
def test_preset_params_on_meta_equal_transformers_and_the_estimate(name, total, active, mtp):
    spec, p, theirs = checked_preset(name, "Glm4MoeForCausalLM")
    assert len(theirs.model.layers) == spec.n_layers  # the MTP layer is not built
    assert (p.total, p.active) == (total, active)
    assert p.mtp == mtp  # apart: in no other figure
    # the card: 355B / 32B (GLM-4.5), 106B / 12B (Air); with the MTP module 356.8B / 109.2B
    assert abs(p.total / 1e9 - {"glm-4.5": 355, "glm-4.5-air": 106}[name]) < 3.5


def _mtp_counted(spec) -> int:
    """One MTP module built from archscope's own modules on meta: a Block like the last layer,
    eh_proj 2d -> d, enorm, hnorm and the shared head's norm (embedding and head shared)."""
    with torch.device("meta"):
        block = Block(spec, spec.plan[-1])
        eh_proj = torch.nn.Linear(2 * spec.d_model, spec.d_model, bias=False)
    d = spec.d_model
    return sum(p.numel() for p in [*block.parameters(), *eh_proj.parameters()]) + 3 * d


def _mtp_transformers(spec) -> int:
    """transformers' own MtpModel (5.23, the class `generate(use_mtp=True)` drafts with) on
    meta, less the embedding and head it shares with the main model."""
    from transformers.modeling_layers import MtpModel

    with torch.device("meta"):
        main = transformers.AutoModelForCausalLM.from_config(
            transformers.AutoConfig.for_model(**spec_to_hf_config(spec)))
        mtp = MtpModel(main, spec.mtp_layers)
    shared = {id(p) for p in main.parameters()}
    return sum(p.numel() for p in mtp.parameters() if id(p) not in shared)


@pytest.mark.parametrize("name", ["deepseek-v3", "glm-4.5", "glm-4.5-air"])
def test_mtp_estimate_equals_the_modules_it_is_made_of(name):
    spec = load_spec(name)
    p = count_params(spec)
    assert spec.mtp_layers == 1
    assert p.mtp == _mtp_counted(spec) == _mtp_transformers(spec)
    assert p.mtp == sum(part.params * part.copies for part in mtp_parts(spec))


def test_deepseek_v3_mtp_against_readme_weights():
    """README_WEIGHTS: the MTP module has "11.5B unique parameters (excluding the shared 0.9B
    Embedding and 0.9B output Head)". Counted: 11.61B with eh_proj (102.8M, a tensor the
    checkpoint holds and transformers' MtpLayer builds), 11.507B without: the README's figure
    matches the module less eh_proj, cut to one decimal."""
    spec = load_spec("deepseek-v3")
    mtp, eh_proj = count_params(spec).mtp, 2 * spec.d_model * spec.d_model
    assert mtp == 11_610_067_968 and eh_proj == 102_760_448
    assert int((mtp - eh_proj) / 1e8) == 115 and round(mtp / 1e9, 1) == 11.6
    assert count_params(load_spec("kimi-k2")).mtp == 0  # num_nextn_predict_layers 0


def _checkpoint_with_mtp(folder, family, layers=(3,)):
    """transformers' save_pretrained of the tiny model, plus MTP-module tensors as DeepSeek-V3
    and GLM-4.5 store them (model.layers.<n_layers + k>.*)."""
    _, hf, _, _, _ = family
    hf.save_pretrained(folder)
    tensors = load_file(folder / "model.safetensors")
    d = hf.config.hidden_size
    for n in layers:
        tensors.update({f"model.layers.{n}.eh_proj.weight": torch.zeros(d, 2 * d),
                        f"model.layers.{n}.enorm.weight": torch.ones(d),
                        f"model.layers.{n}.shared_head.norm.weight": torch.ones(d),
                        f"model.layers.{n}.self_attn.q_proj.weight": torch.zeros(64, d)})
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def test_the_loader_skips_the_mtp_module_with_a_note(family, tmp_path):
    folder = _checkpoint_with_mtp(tmp_path / "ckpt", family)
    with pytest.warns(SkippedMTPWarning, match=r"skipped 4 tensors.*model\.layers\.3\.\*"):
        model, spec = load_checkpoint(folder, progress=False)
    assert spec.mtp_layers == 1
    _, _, _, ids, reference = family
    with torch.no_grad():
        assert max_diff(model(ids), reference) < TOL


def test_a_layer_past_the_mtp_modules_is_still_unexpected(family, tmp_path):
    folder = _checkpoint_with_mtp(tmp_path / "ckpt", family, layers=(3, 4))
    with pytest.raises(CheckpointError, match="unexpected.*model.layers.4"), \
            pytest.warns(SkippedMTPWarning):  # layer 3 is skipped, layer 4 is refused
        load_checkpoint(folder, progress=False)


def test_a_checkpoint_without_its_correction_bias_is_refused(family, tmp_path):
    """The bias is a buffer, yet the checkpoint must hold it (the loader reads buffers too)."""
    folder = _checkpoint_with_mtp(tmp_path / "ckpt", family, layers=())
    tensors = load_file(folder / "model.safetensors")
    del tensors["model.layers.1.mlp.gate.e_score_correction_bias"]
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="missing.*layers.1.mlp.gate.e_score_correction"):
        load_checkpoint(folder, progress=False)
