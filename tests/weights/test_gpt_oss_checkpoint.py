"""gpt-oss checkpoints: one saved by transformers' own GptOssForCausalLM.save_pretrained loads
(gate/up interleaved and transposed experts, biased router, sinks) with transformers' logits;
make-checkpoint writes one that transformers loads back; MXFP4-quantised expert tensors (the
published checkpoints' `*_blocks` / `*_scales`) are refused by name."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

from archscope.errors import CheckpointError
from archscope.weights import load_checkpoint
from archscope.weights.writer import write_checkpoint
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


def test_make_checkpoint_writes_what_transformers_loads(tmp_path):
    spec = tiny_spec(**OSS)
    write_checkpoint(spec, tmp_path / "ours", dtype=torch.float32)
    model, _ = load_checkpoint(tmp_path / "ours")
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        tmp_path / "ours", attn_implementation="eager").eval()
    with torch.no_grad():
        assert (model(_ids(spec)) - hf(_ids(spec)).logits).abs().max().item() < 1e-4


def test_mxfp4_experts_are_refused_by_name(saved, tmp_path):
    """The published layout: each expert weight as packed 4-bit `_blocks` plus `_scales`."""
    folder, _, _ = saved
    out = tmp_path / "mxfp4"
    out.mkdir()
    tensors = load_file(folder / "model.safetensors")
    for i in range(2):
        for proj in ("gate_up_proj", "down_proj"):
            name = f"model.layers.{i}.mlp.experts.{proj}"
            n = tensors.pop(name).shape[0]
            tensors[f"{name}_blocks"] = torch.zeros(n, 32, 2, 16, dtype=torch.uint8)
            tensors[f"{name}_scales"] = torch.zeros(n, 32, 2, dtype=torch.uint8)
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "mxfp4"}
    (out / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=r"experts\.(gate_up|down)_proj_blocks.*MXFP4.*not "
                                              r"implemented"):
        load_checkpoint(out)


def test_profile_compare_hf_twin_runs_eager_where_transformers_has_no_sdpa(saved):
    """GptOss refuses SDPA (its sinks); profile's transformers twin falls back to eager."""
    from archscope.measure.reference import hf_twin, max_abs_logit_diff

    folder, spec, _ = saved
    model, _ = load_checkpoint(folder)
    twin = hf_twin(model)
    assert twin.config._attn_implementation == "eager"
    assert max_abs_logit_diff(model, twin, _ids(spec)) < 1e-4
