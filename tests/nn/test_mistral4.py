"""Mistral 4 (families/mistral4.py) against transformers' Mistral4ForCausalLM, built directly:
transformers registers no causal LM for `mistral4` (it is the text model of Mistral Small 4's
mistral3 wrapper), so the conformance suite, which builds through AutoModelForCausalLM, cannot
run it; the same checks are made here on one tiny config (2 groups of 4 experts, both
eligible; YaRN; the query scale at beta 0, and a case at beta 0.5): parameters on meta (and at the class's default
size), prefill logits, 13 cached decode steps, the cache after a real prefill, prefill FLOPs,
the config round trip through the writer, the weight table tensor for tensor. Then what only
Mistral 4 has: its query scale by position (attention temperature tuning counted from the
position) equal to transformers', and the router's group limit refused naming the key."""

from __future__ import annotations

import json
import warnings

import pytest
import torch
import transformers
from torch.utils.flop_counter import FlopCounterMode

from archscope.errors import SpecError
from archscope.estimate import count_params, kv_cache_bytes, prefill_flops
from archscope.nn import build_model
from archscope.spec import load_spec
from archscope.spec.hf import spec_to_hf_config
from archscope.weights import ours_to_hf, table_for
from conformance.family_cases import _DEEPSEEK, _YARN, NO_IDS
from hf_configs import network
from parity import (active_params_from_modules, decode_stepwise, held_cache_bytes,
                    load_same_weights, max_diff, randomised)

CASE = dict(_DEEPSEEK, num_hidden_layers=3, n_routed_experts=8, n_group=2, topk_group=2,
            norm_topk_prob=True, max_position_embeddings=128, **NO_IDS,
            rope_parameters=dict(_YARN, mscale=1.0, mscale_all_dim=1.0, llama_4_scaling_beta=0.0))
BATCH, PREFILL, STEPS = 2, 5, 13
T = PREFILL + STEPS


def _config(**changes):
    return transformers.Mistral4Config(**{**CASE, **changes})


def _spec(config, tmp_path):
    config.save_pretrained(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_spec(tmp_path)


def _theirs(config, **kwargs):
    return randomised(transformers.Mistral4ForCausalLM._from_config(
        config, attn_implementation="eager", **kwargs))


@pytest.fixture(scope="module")
def twins(tmp_path_factory):
    config = _config()
    spec = _spec(config, tmp_path_factory.mktemp("mistral4"))
    hf = _theirs(config)
    ours = load_same_weights(spec, hf, "mistral4").eval()
    ids = torch.randint(0, spec.vocab_size, (BATCH, T), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return spec, hf, ours, ids, hf(ids).logits


@pytest.mark.slow
def test_parameters_on_meta_equal_transformers(twins):
    spec, _, ours, _, _ = twins
    with torch.device("meta"):
        theirs = transformers.Mistral4ForCausalLM(_config())
    assert count_params(spec).total == sum(p.numel() for p in theirs.parameters()) == \
        sum(p.numel() for p in build_model(spec, device="meta").parameters())
    assert count_params(spec).active == active_params_from_modules(ours)
    assert spec.plan[0].ffn.kind == "swiglu" and spec.plan[1].ffn.routing.method == "greedy"


@pytest.mark.slow
def test_prefill_and_cached_decode_equal_transformers(twins):
    spec, _, ours, ids, reference = twins
    with torch.no_grad():
        assert max_diff(ours(ids), reference) < 1e-4
    assert max_diff(decode_stepwise(ours, ids, prefill=PREFILL), reference) < 1e-4
    assert held_cache_bytes(ours, ids, 2 * T) == kv_cache_bytes(spec, T, BATCH, "fp32")


@pytest.mark.slow
def test_prefill_flops_equal_transformers_eager(twins):
    spec, hf, _, ids, _ = twins
    eager = transformers.Mistral4ForCausalLM._from_config(
        hf.config, attn_implementation="eager", experts_implementation="eager").eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        eager(ids[:, :10])
    assert prefill_flops(spec, 10, batch=BATCH, attention="full").total == \
        counter.get_total_flops()


def test_the_config_round_trips_and_the_weight_table_is_tensor_for_tensor(twins, tmp_path):
    spec, hf, ours, _, _ = twins
    written = spec_to_hf_config(spec)
    assert written["model_type"] == "mistral4"
    config = transformers.Mistral4Config(**{k: v for k, v in written.items()
                                            if k != "model_type"})
    assert network(_spec(config, tmp_path)) == network(spec)
    theirs = hf.state_dict()
    back = ours_to_hf(table_for("mistral4"), ours.state_dict())
    assert set(back) == set(theirs) and all(torch.equal(back[k], theirs[k]) for k in theirs)


@pytest.mark.slow
def test_the_default_size_is_counted_exactly(tmp_path):
    """The class's default config (YaRN with the query scale at beta 0.1), on meta."""
    config = transformers.Mistral4Config()
    spec = _spec(config, tmp_path)
    with torch.device("meta"):
        theirs = transformers.Mistral4ForCausalLM(config)
    assert count_params(spec).total == sum(p.numel() for p in theirs.parameters())
    assert (spec.attention.temperature_scale, spec.attention.temperature_offset) == (0.1, 0)


def test_the_query_scale_by_position_equals_transformers(tmp_path):
    """beta 0.5 over an original context of 4: the 13 cached steps cross four floor
    boundaries; at beta 0 the same weights give other logits (the scale is really applied)."""
    rope = dict(_YARN, original_max_position_embeddings=4, mscale=1.0, mscale_all_dim=1.0)
    config = _config(rope_parameters=dict(rope, llama_4_scaling_beta=0.5))
    spec = _spec(config, tmp_path / "scaled")
    hf = _theirs(config)
    ours = load_same_weights(spec, hf, "mistral4").eval()
    ids = torch.randint(0, spec.vocab_size, (BATCH, T), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        reference = hf(ids).logits
        assert max_diff(ours(ids), reference) < 1e-4
        unscaled = load_same_weights(_spec(_config(rope_parameters=dict(
            rope, llama_4_scaling_beta=0.0)), tmp_path / "plain"), hf, "mistral4").eval()
        assert max_diff(unscaled(ids), reference) > 1e-3
    assert max_diff(decode_stepwise(ours, ids, prefill=PREFILL), reference) < 1e-4
    written = spec_to_hf_config(spec)
    back = transformers.Mistral4Config(**{k: v for k, v in written.items() if k != "model_type"})
    assert network(_spec(back, tmp_path / "back")) == network(spec)


@pytest.mark.parametrize("change, key, words", [
    ({"rope_parameters": dict(_YARN, llama_4_scaling_beta=-0.1)},
     "rope_parameters.llama_4_scaling_beta", "beta >= 0"),
    ({"rope_parameters": dict(_YARN)}, "rope_parameters.llama_4_scaling_beta", "required"),
    ({"rope_parameters": None}, "rope_parameters.llama_4_scaling_beta", "default YaRN"),
    ({"topk_group": 1}, "n_group", "without a correction bias"),
    ({"rope_interleave": False}, "rope_interleave", "interleaved pairs only"),
    ({"rope_parameters": dict(_YARN, llama_4_scaling_beta=0.0, partial_rotary_factor=1.0)},
     "rope_parameters.partial_rotary_factor", "qk_rope_head_dim 8"),
])
def test_what_archscope_does_not_build_is_refused_naming_the_key(change, key, words, tmp_path):
    data = {**_config().to_diff_dict(), **change, "model_type": "mistral4"}
    if change.get("rope_parameters", 0) is None:
        data.pop("rope_parameters")
    (tmp_path / "config.json").write_text(json.dumps(data))
    with pytest.raises(SpecError) as err, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        load_spec(tmp_path)
    assert err.value.key == key and words in str(err.value)


@pytest.mark.slow
def test_a_deepseek_v2_spec_that_renormalises_is_written_as_mistral4_exactly():
    """What the exporter now writes as mistral4 (DeepseekV2's class ignores norm_topk_prob): a
    full-rank query, two shared experts, YaRN with DeepSeek-V2's mscale pair; transformers'
    Mistral4 built from the written config computes archscope's logits."""
    from parity import TINY_MLA_MOE, tiny_spec

    attention = dict(TINY_MLA_MOE["attention"], q_lora_rank=None)
    ffn = dict(TINY_MLA_MOE["ffn"], n_shared_experts=2,
               router=dict(method="greedy", normalize=True, scaling_factor=1.5))
    spec = tiny_spec(attention=attention, ffn=ffn, max_seq_len=128, position=dict(
        kind="rope", theta=1e4, scaling=dict(kind="yarn", factor=4.0, original_max_seq_len=32,
                                             mscale=0.707, mscale_all_dim=0.707)))
    written = spec_to_hf_config(spec)
    assert written.pop("model_type") == "mistral4"
    hf = _theirs(transformers.Mistral4Config(**written))
    ours = load_same_weights(spec, hf, "mistral4").eval()
    ids = torch.randint(0, spec.vocab_size, (BATCH, T), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert max_diff(ours(ids), hf(ids).logits) < 1e-4
