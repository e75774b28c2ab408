"""Weights, inference memory and the longest context that fits."""

import pytest

from archscope.errors import InputError
from archscope.estimate import (activation_bytes, inference_memory, kv_cache_bytes, max_context,
                                weights_bytes, weights_table)

TINY_PARAMS = 7888  # see test_params.py


def test_weights_table(tiny):
    """The table is the weight formats' (estimate/formats.py, one per name): the plain ones are
    bytes per parameter, the quantized ones keep 16-bit tensors and add scales, so they are
    more than bits / 8 per parameter and less than the next wider format."""
    from archscope.estimate import count_params
    from archscope.spec import load_spec

    assert weights_table(tiny())["fp32"] == 4 * TINY_PARAMS
    assert weights_bytes(tiny(), "float32") == 4 * TINY_PARAMS
    spec = load_spec("llama-3.2-1b")  # widths of real models: whole scale blocks per row
    params, table = count_params(spec).total, weights_table(spec)
    assert list(table) == ["fp32", "bf16", "fp8", "int8", "int4-g128", "nvfp4", "mxfp4"]
    assert table["fp32"] == 4 * params and table["bf16"] == 2 * params
    assert params < table["int8"] < table["bf16"]
    assert params // 2 < table["int4-g128"] < table["int8"]
    assert weights_bytes(spec, "int4") == table["int4-g128"]  # one name, one format


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
