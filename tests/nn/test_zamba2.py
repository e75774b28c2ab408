"""Zamba 2 (Mamba-2 layers, shared transformer blocks run at the hybrid layers) beyond the
conformance case: transformers' own cache object after a prefill holds the KV bytes and the
state bytes archscope estimates (fp32 and bf16: the dtypes it really keeps), and so does
archscope's; the shared blocks' weights are counted once while their FLOPs count at every use
(one more use adds, in transformers' own class, exactly the per-use parameters and one block's
FLOPs); negative controls.
"""

import dataclasses
import warnings

import pytest
import torch
import transformers

from archscope.estimate import count_params, kv_cache_bytes, prefill_flops
from archscope.estimate.state import state_bytes
from archscope.measure.reference import returned_cache
from archscope.nn import build_model, count_parameters
from archscope.spec import load_spec
from parity import checked_preset, hf_eager_prefill_flops, slots_in_use_bytes

BATCH, PREFILL = 2, 13
TYPES = ["mamba", "hybrid", "mamba", "hybrid", "hybrid"]
CONFIG = dict(vocab_size=97, hidden_size=32, num_hidden_layers=5, mamba_d_state=8,
              mamba_d_conv=4, mamba_expand=2, mamba_ngroups=2, n_mamba_heads=4, chunk_size=8,
              intermediate_size=48, num_attention_heads=4, num_key_value_heads=4,
              num_mem_blocks=2, use_shared_attention_adapter=True, adapter_rank=4,
              use_mem_rope=True, max_position_embeddings=64, tie_word_embeddings=True,
              bos_token_id=None, eos_token_id=None, pad_token_id=None)


def zamba2(tmp_path, **changes):
    """(transformers' config, archscope's spec read from its config.json)."""
    config = transformers.Zamba2Config(**{**CONFIG, "layers_block_type": TYPES, **changes})
    folder = tmp_path / "_".join(str(v) for v in changes.values()).replace(",", "")[:60]
    config.save_pretrained(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return config, load_spec(folder)


def their_cache_bytes(config, dtype) -> tuple[int, int]:
    """(KV bytes, state bytes) transformers' own cache holds after a prefill of PREFILL."""
    hf = transformers.AutoModelForCausalLM.from_config(config).to(dtype).eval()
    ids = torch.randint(0, config.vocab_size, (BATCH, PREFILL))
    with torch.no_grad():
        cache = returned_cache(hf(ids, use_cache=True))
    kv = [t for layer in cache.layers for t in (getattr(layer, "keys", None),
                                                getattr(layer, "values", None))
          if isinstance(t, torch.Tensor)]
    states = [t for layer in cache.layers
              for held in (getattr(layer, "conv_states", {}), getattr(layer, "recurrent_states", {}))
              for t in held.values() if isinstance(t, torch.Tensor)]
    size = sum(t.numel() * t.element_size() for t in kv)
    return size, sum(t.numel() * t.element_size() for t in states)


@pytest.mark.slow
@pytest.mark.parametrize("dtype,name", [(torch.float32, "fp32"), (torch.bfloat16, "bf16")])
def test_transformers_cache_holds_the_estimate(tmp_path, dtype, name):
    """Every hybrid layer keeps its shared block's keys and values beside its Mamba state
    (LinearAttentionAndFullAttentionLayer); the SSM state stays fp32 under bf16 weights."""
    config, spec = zamba2(tmp_path)
    kv, states = their_cache_bytes(config, dtype)
    assert kv == kv_cache_bytes(spec, PREFILL, BATCH, name) > 0
    assert states == state_bytes(spec, BATCH, name) > 0
    # negative control: the KV at one use only is not what transformers holds
    assert kv != kv_cache_bytes(zamba2(tmp_path, layers_block_type=[
        "mamba", "hybrid", "mamba", "mamba", "mamba"])[1], PREFILL, BATCH, name)


@pytest.mark.slow
def test_our_cache_holds_the_estimate(tmp_path):
    _, spec = zamba2(tmp_path)
    ours = build_model(spec)
    cache = ours.new_cache(BATCH, 32)
    with torch.no_grad():
        ours(torch.randint(0, spec.vocab_size, (BATCH, PREFILL)), cache)
    assert slots_in_use_bytes(cache) == kv_cache_bytes(spec, PREFILL, BATCH, "fp32")
    assert cache.state_nbytes() == state_bytes(spec, BATCH, "fp32")
    assert cache.kv_nbytes() > slots_in_use_bytes(cache)  # allocated for 32 tokens


def _their_params(config) -> int:
    with torch.device("meta"):
        hf = transformers.AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in hf.parameters())  # tied copies once


@pytest.mark.slow
def test_shared_weights_count_once_and_their_flops_at_every_use(tmp_path):
    """One more hybrid layer (a third use of two blocks): transformers' class gains only that
    use's linear and adapters, and its counted prefill FLOPs gain one whole block use; the
    estimate says both."""
    config2, two = zamba2(tmp_path, layers_block_type=["mamba", "hybrid", "mamba", "hybrid",
                                                       "mamba"])
    config3, three = zamba2(tmp_path)
    d, r, f = two.d_model, two.shared.adapter_rank, two.ffn.d_ff
    per_use = d * d + 3 * (2 * (2 * d) * r) + (d * r + r * 2 * f)
    theirs2, theirs3 = _their_params(config2), _their_params(config3)
    assert theirs3 - theirs2 == per_use
    assert count_params(two).total == theirs2 == count_parameters(build_model(two, "meta"))
    assert count_params(three).total == theirs3 == count_parameters(build_model(three, "meta"))
    block = sum(p.numel() for p in build_model(three, "meta").layers[1].shared_transformer
                .parameters())
    assert theirs3 > block * three.shared.uses - per_use  # not stored once per use: then less
    torch.manual_seed(0)
    counted2, counted3 = (hf_eager_prefill_flops(s, BATCH, PREFILL) for s in (two, three))
    # transformers' eager attention multiplies every query-key pair: full attention FLOPs
    ours2, ours3 = (prefill_flops(s, PREFILL, BATCH, "full").total for s in (two, three))
    assert ours3 - ours2 == counted3 - counted2 > 0
    # the FLOPs of that use: the block's matmuls and attention per token, more than its linear
    assert ours3 - ours2 > 2 * BATCH * PREFILL * per_use


@pytest.mark.slow
def test_the_preset_on_meta_equals_transformers_and_the_estimate():
    """zamba2-7b: archscope's and transformers' classes on meta hold the estimate (7.36B: the
    report's "7.4B"); its KV cache per token is the shared attention's at its 13 uses."""
    spec, p, theirs = checked_preset("zamba2-7b", "Zamba2ForCausalLM")
    assert theirs.config.hybrid_layer_ids == list(spec.shared.at)
    assert round(p.total / 1e9, 1) == 7.4  # the report's "7.4B parameter"
    a = spec.attention
    assert kv_cache_bytes(spec, 1, 1, "bf16") == 13 * 2 * a.n_kv_heads * a.head_dim * 2


def test_the_export_compares_the_shared_blocks_attention(tmp_path):
    """No layer of a Zamba 2 spec attends: the model's attention is the shared blocks', and the
    export's read-back comparison still sees it (a NoPE shared attention under RoPE positions
    is what Zamba2Config cannot say)."""
    from archscope.errors import SpecError
    from archscope.spec.hf import spec_to_hf_config

    _, spec = zamba2(tmp_path)
    assert spec_to_hf_config(spec)["model_type"] == "zamba2"
    unrotated = spec.replace(attention=dataclasses.replace(spec.attention, rope=False))
    with pytest.raises(SpecError):  # (the error names the first family tried)
        spec_to_hf_config(unrotated)
