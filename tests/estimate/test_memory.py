"""Weights, inference memory and the longest context that fits."""

import pytest

from archscope.errors import InputError
from archscope.estimate import (activation_bytes, inference_memory, kv_cache_bytes, max_context,
                                weights_bytes, weights_table)

TINY_PARAMS = 7888  # see test_params.py


def test_weights_table(tiny):
    assert weights_table(tiny()) == {"fp32": 4 * TINY_PARAMS, "fp16": 2 * TINY_PARAMS,
                                     "bf16": 2 * TINY_PARAMS, "int8": TINY_PARAMS,
                                     "int4": TINY_PARAMS // 2}
    assert weights_bytes(tiny(), "float32") == 4 * TINY_PARAMS


def test_activations_by_hand(tiny):
    # widest layer: SwiGLU hidden 2 x 32 = 64 (attention: q 16 + out 16 + k/v 16 = 48);
    # per token 2 x 16 residual + normed input; logits of the last position, 100.
    assert activation_bytes(tiny(), 10, batch=2, dtype="fp32") == 4 * 2 * (10 * (32 + 64) + 100)
    assert activation_bytes(tiny(), 10, 2, "fp32", all_logits=True) \
        == 4 * 2 * 10 * (32 + 64 + 100)


def test_inference_memory_adds_up(tiny):
    m = inference_memory(tiny(), 20, batch=2, dtype="bf16")
    assert m.total == weights_bytes(tiny(), "bf16") + kv_cache_bytes(tiny(), 20, 2, "bf16") \
        + activation_bytes(tiny(), 20, 2, "bf16")
    chunked = inference_memory(tiny(), 20, batch=2, prefill_chunk=4)
    assert chunked.activations == activation_bytes(tiny(), 4, 2)


def test_quantised_weights_keep_a_bf16_cache(tiny):
    m = inference_memory(tiny(), 20, dtype="int4")
    assert m.kv_dtype == "bf16" and m.kv_cache == kv_cache_bytes(tiny(), 20, 1, "bf16")
    assert inference_memory(tiny(), 20, dtype="int4", kv_dtype="int8").kv_dtype == "int8"


def test_max_context_is_the_edge(tiny):
    spec = tiny(max_seq_len=4096)
    budget = inference_memory(spec, 1000).total + 10
    n = max_context(spec, budget)
    assert inference_memory(spec, n).total <= budget < inference_memory(spec, n + 1).total
    assert 1000 <= n < 1001 + 10


def test_max_context_limits(tiny):
    spec = tiny()
    assert max_context(spec, weights_bytes(spec)) == 0  # the weights alone fill it
    assert max_context(spec, 1e12) == spec.max_seq_len
    assert max_context(spec, 1e9, capped=False) > spec.max_seq_len
    with pytest.raises(InputError):
        max_context(spec, 0)


def test_max_context_with_windows_everywhere_terminates(tiny):
    spec = tiny(attention={"window": 8})
    assert max_context(spec, 1e9, prefill_chunk=16, capped=False) > 0
