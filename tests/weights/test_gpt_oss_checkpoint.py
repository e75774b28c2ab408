"""gpt-oss checkpoints: one saved by transformers' own GptOssForCausalLM.save_pretrained loads
(gate/up interleaved and transposed experts, biased router, sinks) with transformers' logits;
MXFP4-quantised expert tensors (the published checkpoints' `*_blocks` / `*_scales`) load
dequantised, as transformers decodes them. (That transformers loads what make-checkpoint writes
is the conformance cases'.)"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from archscope.weights import load_checkpoint
from weights_helpers import VOCAB, write_hf_checkpoint
from parity import tiny_spec

OSS = dict(vocab_size=VOCAB, n_layers=2,
           position=dict(kind="rope", theta=10000.0,
                         scaling=dict(kind="yarn", factor=4.0, original_max_seq_len=4096,
                                      truncate=False)),
           attention=dict(kind="gqa", n_heads=4, n_kv_heads=2, head_dim=16, bias=True,
                          sinks=True),
           ffn=dict(kind="moe", n_experts=4, top_k=2, d_expert=16, activation="quick_gelu",
                    bias=True, limit=7.0, router=dict(bias=True)),
           layers=[dict(select="0::2", attention=dict(window=4))])


def _ids(spec):
    return torch.randint(0, spec.vocab_size, (2, 9), generator=torch.Generator().manual_seed(1))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("oss")
    spec = tiny_spec(**OSS)
    hf = write_hf_checkpoint(folder, spec, shard=None)
    return folder, spec, hf


def test_a_checkpoint_saved_by_transformers_loads_with_its_logits(saved):
    folder, spec, hf = saved
    names = load_file(folder / "model.safetensors")
    assert names["model.layers.0.mlp.experts.gate_up_proj"].shape == (4, 64, 32)  # [E, d, 2f]
    model, loaded = load_checkpoint(folder)
    assert loaded.attention.sinks and loaded.ffn.limit == 7.0
    with torch.no_grad():
        assert (model(_ids(spec)) - hf(_ids(spec)).logits).abs().max().item() < 1e-4


def test_mxfp4_experts_load_dequantised_with_transformers_logits(tmp_path):
    """The published layout: each expert weight as packed 4-bit `_blocks` plus E8M0 `_scales`.
    Random codes are decoded by transformers' own convert_moe_packed_tensors into its model's
    expert weights; the checkpoint holds only the packed pairs, and archscope's load of it
    gives that model's logits."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors

    spec = tiny_spec(**{**OSS, "ffn": {**OSS["ffn"], "d_expert": 32}})  # whole 32-value blocks
    hf = write_hf_checkpoint(tmp_path / "float", spec, shard=None)
    tensors = load_file(tmp_path / "float" / "model.safetensors")
    g = torch.Generator().manual_seed(3)
    for name, param in hf.named_parameters():
        if not name.endswith(("experts.gate_up_proj", "experts.down_proj")):
            continue
        n, d_in, d_out = param.shape  # GptOssExperts' [E, in, out]
        blocks = torch.randint(0, 256, (n, d_out, d_in // 32, 16), generator=g, dtype=torch.uint8)
        scales = torch.randint(121, 125, (n, d_out, d_in // 32), generator=g, dtype=torch.uint8)
        with torch.no_grad():
            param.copy_(convert_moe_packed_tensors(blocks, scales, dtype=torch.float32))
        del tensors[name]
        tensors[f"{name}_blocks"], tensors[f"{name}_scales"] = blocks, scales
    out = tmp_path / "mxfp4"
    out.mkdir()
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((tmp_path / "float" / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4"}
    (out / "config.json").write_text(json.dumps(config))
    model, _ = load_checkpoint(out)
    with torch.no_grad():
        reference = hf(_ids(spec)).logits
        assert reference.abs().max() > 1.0
        assert (model(_ids(spec)) - reference).abs().max().item() < 1e-4


def test_profile_compare_hf_twin_runs_eager_where_transformers_has_no_sdpa(saved):
    """GptOss refuses SDPA (its sinks); profile's transformers twin falls back to eager."""
    from archscope.measure.reference import hf_twin, max_abs_logit_diff

    folder, spec, _ = saved
    model, _ = load_checkpoint(folder)
    twin = hf_twin(model)
    assert twin.config._attn_implementation == "eager"
    assert max_abs_logit_diff(model, twin, _ids(spec)) < 1e-4
