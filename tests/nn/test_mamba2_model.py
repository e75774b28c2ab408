"""Mamba-2 as a whole model (transformers' Mamba2ForCausalLM) beyond the conformance case: the
state transformers' own cache object holds after a prefill (conv window in the activations'
dtype, SSM state fp32 even under bf16 weights) against archscope's estimate, byte for byte; the
keys the reader refuses, each named; and the mamba2-2.7b preset on the meta device."""

import pytest
import torch
import transformers

from archscope.errors import SpecError
from archscope.estimate import count_params, kv_cache_bytes
from archscope.estimate.state import state_bytes
from archscope.measure.reference import returned_cache
from archscope.nn import build_model
from archscope.spec import load_spec
from archscope.spec.hf_import import mapping_from_raw

TINY = dict(model_type="mamba2", vocab_size=97, hidden_size=64, num_hidden_layers=3,
            num_heads=8, head_dim=16, expand=2, state_size=8, n_groups=2, conv_kernel=4,
            chunk_size=8, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def _spec(tmp_path, **changes):
    config = transformers.Mamba2Config(**{k: v for k, v in {**TINY, **changes}.items()
                                          if k != "model_type"})
    config.save_pretrained(tmp_path)
    return load_spec(tmp_path), config


@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_transformers_cache_holds_the_estimated_state(tmp_path, dtype, name):
    """After a 13-token prefill, transformers' cache holds per layer conv_states [B, conv_dim, K]
    in the model's dtype and recurrent_states [B, H, P, N] in fp32 (its scan runs in fp32 and
    the state keeps that dtype): what state_bytes estimates; no KV at all."""
    spec, config = _spec(tmp_path)
    hf = transformers.AutoModelForCausalLM.from_config(config).to(dtype).eval()
    ids = torch.randint(0, 97, (2, 13), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        cache = returned_cache(hf(ids, use_cache=True))
    conv = [t for layer in cache.layers for t in getattr(layer, "conv_states", {}).values()]
    ssm = [t for layer in cache.layers for t in getattr(layer, "recurrent_states", {}).values()]
    assert len(conv) == len(ssm) == spec.n_layers
    assert {t.dtype for t in conv} == {dtype} and {t.dtype for t in ssm} == {torch.float32}
    held = sum(t.numel() * t.element_size() for t in conv + ssm)
    assert held == state_bytes(spec, 2, name)
    assert kv_cache_bytes(spec, 13, 2, name) == 0
    ours = build_model(spec, dtype=dtype)
    mine = ours.new_cache(2, 16)
    with torch.no_grad():
        ours(ids, mine)
    assert mine.state_nbytes() == held and mine.kv_nbytes() == 0


@pytest.mark.parametrize("key,value,word", [
    ("norm_before_gate", True, "norm_before_gate"), ("rms_norm", False, "rms_norm"),
    ("expand", 3, "expand"), ("hidden_act", "gelu", "hidden_act")])
def test_what_transformers_would_not_run_is_refused_naming_the_key(key, value, word):
    with pytest.raises(SpecError) as err:
        mapping_from_raw({**TINY, key: value}, "config.json", "x", "test")
    assert err.value.key == word


def test_a_file_without_a_context_length_reads_and_writes_without_one(tmp_path):
    from archscope.spec.hf import spec_to_hf_config
    from archscope.spec.limits import CONTEXT_MAX

    spec, _ = _spec(tmp_path)
    assert spec.max_seq_len == CONTEXT_MAX
    assert "max_position_embeddings" not in spec_to_hf_config(spec)
    given, _ = _spec(tmp_path / "given", max_position_embeddings=2048)
    assert given.max_seq_len == 2048
    assert spec_to_hf_config(given)["max_position_embeddings"] == 2048


def test_the_preset_on_meta_equals_transformers():
    from parity import checked_preset

    spec, p, _ = checked_preset("mamba2-2.7b", "Mamba2ForCausalLM")
    assert p.total == 2_702_599_680  # "2.7b": 64 layers of 40.2M and a tied 50288 x 2560
    assert spec.tie_embeddings
