"""Zamba (multi-head Mamba-1 layers, one shared transformer block at the hybrid layers) beyond
the conformance case: transformers' own cache object after a prefill holds the KV bytes and the
state bytes archscope estimates, in fp32 and bf16 (its SSM state stays fp32 under bf16 weights:
the scan discretises in fp32); the heads change no count (the same spec with one head has the
same parameters, state and FLOPs, and transformers' class agrees); negative controls.
"""

import dataclasses
import warnings

import pytest
import torch
import transformers

from archscope.estimate import count_params, kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.nn import build_model, count_parameters
from archscope.spec import load_spec
from test_zamba2 import their_cache_bytes

BATCH, PREFILL = 2, 13
CONFIG = dict(vocab_size=97, hidden_size=32, num_hidden_layers=5, mamba_d_state=8,
              mamba_d_conv=4, mamba_expand=2, n_mamba_heads=2, mamba_dt_rank=3,
              intermediate_size=48, num_attention_heads=4, num_key_value_heads=2,
              layers_block_type=["mamba", "hybrid", "mamba", "hybrid", "hybrid"],
              max_position_embeddings=64, bos_token_id=None, eos_token_id=None,
              pad_token_id=None)


def zamba(tmp_path, **changes):
    config = transformers.ZambaConfig(**{**CONFIG, **changes})
    folder = tmp_path / ("_".join(f"{k}{v}" for k, v in changes.items())[:60] or "base")
    config.save_pretrained(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return config, load_spec(folder)


@pytest.mark.slow
@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_transformers_cache_holds_the_estimate(tmp_path, dtype, name):
    config, spec = zamba(tmp_path)
    assert spec.mixer.n_heads == 2
    kv, states = their_cache_bytes(config, dtype)
    assert kv == kv_cache_bytes(spec, PREFILL, BATCH, name) > 0
    assert states == state_bytes(spec, BATCH, name) > 0
    if dtype == torch.bfloat16:  # the SSM state kept fp32: bf16 throughout would be less
        m, layers = spec.mixer, len(spec.plan)
        assert states == layers * BATCH * (m.d_inner * m.conv_kernel * 2 + m.d_inner * m.d_state * 4)


def _their_params(config) -> int:
    with torch.device("meta"):
        hf = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in hf.parameters())


@pytest.mark.slow
def test_heads_change_no_count(tmp_path):
    """One head or four: transformers' class holds the same parameters, and so do ours and the
    estimate; the state and FLOPs estimates are the same; the tensors' shapes differ."""
    config2, two = zamba(tmp_path)
    config4, four = zamba(tmp_path, n_mamba_heads=4)
    config1, one = zamba(tmp_path, n_mamba_heads=1)
    assert len({_their_params(c) for c in (config1, config2, config4)}) == 1
    for spec in (one, two, four):
        assert count_params(spec).total == _their_params(config2)
        assert count_parameters(build_model(spec, "meta")) == _their_params(config2)
    assert state_bytes(one, BATCH, "fp32") == state_bytes(four, BATCH, "fp32")
    assert (prefill_flops(one, PREFILL, BATCH, "full").total
            == prefill_flops(four, PREFILL, BATCH, "full").total)
    shapes = {s.mixer.n_heads: build_model(s, "meta").layers[0].mixer.x_proj.weight.shape
              for s in (one, four)}
    assert shapes[1] == (3 + 16, 64) and shapes[4] == (4, 3 + 16, 16)


def test_a_head_count_not_dividing_the_width_is_refused(tmp_path):
    config, spec = zamba(tmp_path)
    with pytest.raises(Exception, match="n_heads"):
        dataclasses.replace(spec.mixer, n_heads=3).validate()
