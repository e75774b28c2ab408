"""DeepSeek Sparse Attention (the MLA indexer of DeepSeek-V3.2 and GLM-5): what the conformance
cases (family_cases.py: deepseek_v32, glm_moe_dsa; kind_cases.py: mla-dsa*) do not show.

- negative controls: on the cases' weights, dense attention, the other RoPE pairing in the
  indexer, or a shared layer attending densely each miss transformers' logits by far more than
  the tolerance (so the suite's logits check sees the selection);
- a decode step reads min(context, topk) keys and the indexer all of them, under every MLA
  convention (recompute decompresses only the selected latents);
- GLM-MoE-DSA's indexer_types as its config class derives them; the spec's refusals.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
import transformers

from archscope.errors import SpecError
from archscope.estimate import decode_flops
from archscope.nn import build_model
from archscope.nn.mla import set_mla_decode_form
from archscope.spec import load_spec
from archscope.spec.fields import from_mapping, to_mapping
from archscope.spec.schema import ModelSpec
from archscope.weights import hf_to_ours, table_for
from conformance.family_cases import FAMILY_CASES, random_correction_bias
from conformance.kind_cases import kind_spec
from parity import counted_flops, max_diff

CASES = {c.model_type: c for c in FAMILY_CASES if c.model_type in ("deepseek_v32", "glm_moe_dsa")}


def _twins(model_type: str, tmp_path, change=None):
    """transformers' model of the family case (random weights) and archscope's, built from the
    case's spec changed by `change(mapping)`, on the same weights; and prompt ids of 18."""
    case = CASES[model_type]
    config = transformers.AutoConfig.for_model(model_type, **case.config)
    config.save_pretrained(tmp_path)
    spec = load_spec(tmp_path)
    if change is not None:
        mapping = to_mapping(spec)
        change(mapping)
        spec = from_mapping(ModelSpec, mapping)
    hf = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            scale = 0.1 if "norm" in name else 0.2
            p.copy_((1 if "norm" in name else 0) + scale * torch.randn(p.shape,
                                                                        generator=generator))
        random_correction_bias(hf)
    ours = build_model(spec)
    shapes = {k: v.shape for k, v in ours.state_dict().items()}
    mapped, unmatched = hf_to_ours(table_for(model_type), hf.state_dict(), shapes)
    assert not unmatched
    ours.load_state_dict(mapped, strict=True)
    ids = torch.randint(0, spec.vocab_size, (2, 18), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return max_diff(ours(ids), hf.eval()(ids).logits)


def _dense(mapping):
    """Every query attends to every key: a topk past the prompt."""
    mapping["attention"]["indexer"]["topk"] = 64
    for override in mapping.get("layers", []):
        if "attention" in override:
            override["attention"]["indexer"]["topk"] = 64


@pytest.mark.slow
def test_the_same_weights_read_exactly(tmp_path):
    assert _twins("deepseek_v32", tmp_path) < 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("model_type", ["deepseek_v32", "glm_moe_dsa"])
def test_attending_densely_misses_transformers(model_type, tmp_path):
    assert _twins(model_type, tmp_path, _dense) > 1e-2


@pytest.mark.slow
def test_the_indexers_rope_pairing_matters(tmp_path):
    def half_split(mapping):
        mapping["attention"]["indexer"].pop("interleaved")
    assert _twins("glm_moe_dsa", tmp_path, half_split) > 1e-2


@pytest.mark.slow
def test_a_shared_layer_attending_densely_misses_transformers(tmp_path):
    def unshared(mapping):  # layer 1 keeps its MLA but reads every key
        override = next(o for o in mapping["layers"] if "attention" in o)
        override["attention"] = {"indexer": None}
    assert _twins("glm_moe_dsa", tmp_path, unshared) > 1e-2


@pytest.mark.parametrize("form", ["absorbed", "recompute"])
def test_a_decode_step_reads_topk_keys_and_scores_all(form):
    """At context 10 with topk 4: attention over 4 keys, the indexer over 10; recompute
    decompresses the 4 it reads. The builder's step under FlopCounterMode = the estimate."""
    spec = kind_spec("mla-dsa")
    model = build_model(spec)
    set_mla_decode_form(model, form)
    cache = model.new_cache(2, 16)
    ids = torch.randint(0, spec.vocab_size, (2, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        model(ids[:, :9], cache)
    estimate = decode_flops(spec, 10, batch=2, mla=form)
    assert counted_flops(lambda: model(ids[:, 9:], cache)) == estimate.total
    a, ix = spec.attention, spec.attention.indexer
    assert estimate.by_component["attention_index"] == 2 * 2 * spec.n_layers * 10 * \
        ix.n_heads * (ix.head_dim + 1)
    qk = a.kv_lora_rank + a.qk_rope_head_dim if form == "absorbed" else a.qk_head_dim
    assert estimate.by_component["attention_qk"] == 2 * 2 * spec.n_layers * 4 * a.n_heads * qk


@pytest.mark.parametrize("config, expected", [
    ({}, ["full"] * 8),
    ({"index_topk_freq": 4, "index_skip_topk_offset": 3}, None),
    ({"index_topk_pattern": "FFSSFSFS"}, None),
])
def test_indexer_types_as_the_config_class_derives_them(config, expected, tmp_path):
    case = dict(CASES["glm_moe_dsa"].config, num_hidden_layers=8)
    case.pop("indexer_types")
    path = tmp_path / "config.json"
    theirs = transformers.AutoConfig.for_model("glm_moe_dsa", **case, **config).indexer_types
    path.write_text(json.dumps({**transformers.AutoConfig.for_model(
        "glm_moe_dsa", **case).to_diff_dict(), **config, "indexer_types": None}))
    spec = load_spec(tmp_path)
    shared = ["shared" if layer.attention.indexer.shared else "full" for layer in spec.plan]
    assert shared == theirs == (expected or theirs)
    assert "shared" in theirs or expected


_GQA = {"kind": "gqa", "n_heads": 4, "n_kv_heads": 4, "head_dim": 8}


@pytest.mark.parametrize("change, key", [
    (lambda a: a.update(_GQA, indexer=a.pop("indexer")) or [
        a.pop(k) for k in list(a) if k not in (*_GQA, "indexer")], "attention.indexer"),
    (lambda a: a.update(q_lora_rank=None), "attention.indexer"),
    (lambda a: a.update(window=4), "attention.indexer"),
    (lambda a: a["indexer"].update(head_dim=2), "attention.indexer.head_dim"),
    (lambda a: a["indexer"].update(shared=True), "attention.indexer.n_heads"),
    (lambda a: a.update(indexer={"topk": 4, "shared": True}), "attention.indexer.shared"),
])
def test_the_spec_refuses_what_no_indexer_builds(change, key):
    mapping = to_mapping(kind_spec("mla-dsa"))
    change(mapping["attention"])
    with pytest.raises(SpecError) as err:
        from_mapping(ModelSpec, mapping)
    assert err.value.key == key


def test_a_shared_selection_must_pick_as_many_keys():
    mapping = to_mapping(kind_spec("mla-dsa-shared-interleaved"))
    mapping["layers"][0]["attention"]["indexer"]["topk"] = 5
    with pytest.raises(SpecError, match="shares a selection of 4 keys"):
        from_mapping(ModelSpec, mapping)


def test_shared_layers_hold_no_indexer_and_cache_no_indexer_keys():
    spec = kind_spec("mla-dsa-shared-interleaved")
    model = build_model(spec, device="meta")
    assert [b.self_attn.indexer is None for b in model.layers] == [False, True]
    cache = build_model(spec).new_cache(1, 8)
    assert [sorted(layer.buffers) for layer in cache.layers] == [
        ["index_k", "k_rope", "latent"], ["k_rope", "latent"]]
    assert dataclasses.replace(spec.plan[1].attention.indexer, shared=None).n_heads is None
